"""The PyTorch baseline script of ../shared/bench (torch_baseline.py), imported from its path as a
library for the bench scripts that time their own workloads with its models and steps."""
import importlib.util


def load(path, threads):
    """The baseline script at `path` as a module, PyTorch set to run on `threads` threads."""
    spec = importlib.util.spec_from_file_location("torch_baseline", path)
    baseline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(baseline)
    baseline.set_threads(threads)
    return baseline
