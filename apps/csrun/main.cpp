// csrun: the Cerebras Model Zoo workflow (validate, compile, train, eval) on any Linux machine.
// This file only handles arguments: it builds the options and dispatches to modes/.

#include <CLI/CLI.hpp>

#include <charconv>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/overrides.hpp"
#include "csrun/build_info.hpp"
#include "modes/build_identity.hpp"
#include "modes/modes.hpp"
#include "replicas/replica_group.hpp"
#include "runtime/host_kernels.hpp"
#include "storage/fatal_signal_note.hpp"

namespace {

using csrun::config::Node;
using csrun::config::RunconfigOverride;
using csrun::config::SourceMark;

constexpr int kUsageError = 2;

// A subcommand's options, as parsed. Runconfig flags stay unset unless given: defaults never
// override the params file.
struct CommandLine {
  std::string positional_params;
  std::string params_flag;
  std::vector<std::string> assignments;
  bool json = false;
  bool fake_data = false;
  bool all_checkpoints = false;
  std::string model_dir;
  std::string target_device;
  std::string checkpoint_path;
  std::string logging = "INFO";
  std::string execution_mode;
  std::string wafer = "wse2";
  std::vector<std::string> dump_ir;
  std::string sample_ledger;
  std::string stream_listen;
  bool async_checkpoint = false;
  bool profile = false;
  bool recompute_layers = false;
  std::int64_t num_csx = 1;
  std::int64_t num_workers_per_csx = 1;
  std::int64_t max_steps = 0;
  std::int64_t num_steps = 0;
  std::int64_t eval_steps = 0;
  std::int64_t seed = 0;
};

struct RunconfigFlag {
  std::string key;
  CLI::Option* option;
  std::function<Node(const SourceMark&)> value;
};

const std::map<std::string, csrun::config::Severity>& logging_levels() {
  using csrun::config::Severity;
  static const std::map<std::string, Severity> levels = {{"DEBUG", Severity::note},
                                                         {"INFO", Severity::note},
                                                         {"WARNING", Severity::warning},
                                                         {"ERROR", Severity::error},
                                                         {"CRITICAL", Severity::error}};
  return levels;
}

// The whole of `text` as an integer of type T, or nothing (not a number, out of range).
template <class T>
std::optional<T> whole_integer(std::string_view text) {
  T value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Integer flags are checked here so a bad value is a usage error with a plain message.
CLI::Validator at_least(std::int64_t minimum) {
  return CLI::Validator(
      [minimum](std::string& text) {
        auto value = whole_integer<std::int64_t>(text);
        if (!value || *value < minimum)
          return "expected an integer >= " + std::to_string(minimum) + ", got '" + text + "'";
        return std::string();
      },
      "INT>=" + std::to_string(minimum));
}

// A seed is any 64-bit integer, as torch.manual_seed takes; a larger one is refused, not clamped.
CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& text) {
        if (whole_integer<std::int64_t>(text)) return std::string();
        return "expected an integer from -2^63 to 2^63-1, got '" + text + "'";
      },
      "INT");
}

// A ZeroMQ endpoint csrun can listen at or connect to: tcp://HOST:PORT (PORT 1 to 65535, or *
// to listen at any free port) or ipc://PATH. ZeroMQ itself would wrap a port beyond 65535.
CLI::Validator stream_endpoint(bool any_port) {
  return CLI::Validator(
      [any_port](std::string& text) {
        const std::string usage = any_port ? "tcp://HOST:PORT (PORT 1 to 65535 or *) or ipc://PATH"
                                           : "tcp://HOST:PORT (PORT 1 to 65535) or ipc://PATH";
        if (text.starts_with("ipc://") && text.size() > 6) return std::string();
        auto colon = text.rfind(':');
        // tcp:// and a HOST of at least one character before the colon.
        if (!text.starts_with("tcp://") || colon == std::string::npos || colon <= 6)
          return "expected " + usage + ", got '" + text + "'";
        std::string port = text.substr(colon + 1);
        if (any_port && port == "*") return std::string();
        auto number = whole_integer<int>(port);
        if (!number || *number < 1 || *number > 65535)
          return "the port of '" + text + "' must be 1 to 65535" + (any_port ? " or *" : "");
        return std::string();
      },
      "ENDPOINT");
}

// Local data workers run this same binary.
std::string this_binary() {
  std::error_code error;
  std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : path.string();
}

std::string uppercase(std::string text) {
  for (char& c : text)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

class Subcommand {
 public:
  Subcommand(CLI::App& parent, const std::string& name, const std::string& description,
             std::function<int(const csrun::modes::RunOptions&)> run)
      : app_(parent.add_subcommand(name, description)), run_(std::move(run)) {
    add_options();
    if (name == "eval") {
      app_->add_flag("--all", line_.all_checkpoints,
                     "Evaluate every checkpoint validate_all.ckpt_paths names, else every one of "
                     "the run's checkpoint_name in model_dir (or checkpoint_root), oldest first");
    }
    if (name == "train") {
      app_->add_flag("--async_checkpoint", line_.async_checkpoint,
                     "Write checkpoints in the background while the next step runs up to its "
                     "update (no copy of the state; atomic as every checkpoint)");
    }
    if (name != "eval") {
      app_->add_flag("--recompute_layers", line_.recompute_layers,
                     "Run each layer's forward pass again in the backward pass instead of keeping "
                     "its activations: less host memory for a forward pass more of compute (the "
                     "wafer estimate is unchanged)");
    }
    if (name == "train" || name == "eval") {
      app_->add_option("--stream_listen", line_.stream_listen,
                       "Take batches from data workers started elsewhere (csrun worker): listen "
                       "at this ZeroMQ endpoint, e.g. tcp://*:5555 or tcp://*:* (any port), and "
                       "write the address and secret to model_dir/csrun-stream-N.rendezvous")
          ->check(stream_endpoint(true));
      app_->add_option("--sample_ledger", line_.sample_ledger,
                       "Append a line per sample consumed (role, epoch, position, index, "
                       "producer) to this file");
      app_->add_flag("--profile", line_.profile,
                     "Time every host step of the simulator's steps (after each program's first "
                     "run): host_profile.tsv in the run's log directory "
                     "(model_dir/cerebras_logs/<run>/), and a summary in the log");
    }
  }

  bool parsed() const { return app_->parsed(); }
  CLI::App& app() { return *app_; }

  // Builds the run options; throws CLI::ValidationError for usage errors.
  csrun::modes::RunOptions options() const {
    csrun::modes::RunOptions options;
    if (!line_.positional_params.empty() && !line_.params_flag.empty()) {
      throw CLI::ValidationError("PARAMS",
                                 "give the params file once: as PARAMS or with -p/--params");
    }
    for (const std::string& point : line_.dump_ir) {
      bool after_matching = point == "lower-host" || point == "layout-scratch";
      if (after_matching && app_->get_name() == "validate") {
        throw CLI::ValidationError("--dump_ir", point +
                                                    " comes after kernel matching, where "
                                                    "validate stops: csrun compile prints it");
      }
    }
    if (line_.all_checkpoints && !line_.checkpoint_path.empty()) {
      throw CLI::ValidationError("--all",
                                 "evaluates every checkpoint of the run; --checkpoint_path "
                                 "names one to evaluate: give one of the two");
    }
    options.params_path =
        line_.positional_params.empty() ? line_.params_flag : line_.positional_params;
    if (options.params_path.empty()) {
      throw CLI::RequiredError("PARAMS (the params YAML file, positional or -p/--params)");
    }
    for (const std::string& assignment : line_.assignments) {
      try {
        options.load.set_overrides.push_back(csrun::config::parse_set_override(assignment));
      } catch (const std::invalid_argument& error) {
        throw CLI::ValidationError("--set", error.what());
      }
    }
    for (const RunconfigFlag& flag : flags_) {
      if (flag.option->count() == 0) continue;
      SourceMark mark{"command line (" + flag.option->get_name() + " " +
                      flag.option->as<std::string>() + ")"};
      options.load.runconfig_overrides.push_back(RunconfigOverride{flag.key, flag.value(mark)});
    }
    options.fake_data = line_.fake_data;
    options.json = line_.json;
    options.all_checkpoints = line_.all_checkpoints;
    options.wafer = line_.wafer;
    options.dump_ir = line_.dump_ir;
    options.sample_ledger = line_.sample_ledger;
    options.stream_listen = line_.stream_listen;
    options.async_checkpoint = line_.async_checkpoint;
    options.profile = line_.profile;
    options.recompute_layers = line_.recompute_layers;
    options.checkpoint_path = line_.checkpoint_path;
    options.worker_binary = this_binary();
    options.shown = logging_levels().at(uppercase(line_.logging));
    return options;
  }

  int run() const { return run_(options()); }

 private:
  template <class T>
  CLI::Option* runconfig_flag(const std::string& key, const std::string& flag, T& target,
                              const std::string& help) {
    CLI::Option* option = app_->add_option(flag, target, help);
    flags_.push_back(RunconfigFlag{key, option, [&target, key](const SourceMark& mark) {
                                     Node node;
                                     if constexpr (std::is_same_v<T, std::string>) {
                                       node = Node::make_string(target, mark, "runconfig." + key);
                                     } else {
                                       node = Node::make_int(target, mark, "runconfig." + key);
                                     }
                                     return node;
                                   }});
    return option;
  }

  void add_options() {
    app_->add_option("PARAMS", line_.positional_params,
                     "The params YAML file (Model Zoo legacy or trainer format)");
    app_->add_option("-p,--params", line_.params_flag, "The params YAML file (instead of PARAMS)");
    runconfig_flag("model_dir", "-o,--model_dir", line_.model_dir,
                   "Directory for checkpoints, logs and compiled plans (overrides model_dir)");
    runconfig_flag("target_device", "--target_device", line_.target_device,
                   "Device to run on: CSX, CPU or GPU (overrides the params' device)")
        ->check(CLI::IsMember({"CSX", "CPU", "GPU"}));
    runconfig_flag("checkpoint_path", "--checkpoint_path", line_.checkpoint_path,
                   "Checkpoint to load instead of the latest one in model_dir");
    runconfig_flag("num_csx", "--num_csx", line_.num_csx, "Number of CS-X systems (data parallel)")
        ->check(at_least(1));
    runconfig_flag("num_workers_per_csx", "--num_workers_per_csx", line_.num_workers_per_csx,
                   "Input workers per CS-X system (0: read in the coordinator)")
        ->check(at_least(0));
    runconfig_flag("max_steps", "--max_steps", line_.max_steps,
                   "Stop training when the global step reaches this")
        ->check(at_least(1));
    runconfig_flag("num_steps", "--num_steps", line_.num_steps, "Number of training steps to run")
        ->check(at_least(1));
    runconfig_flag("eval_steps", "--eval_steps", line_.eval_steps, "Number of evaluation steps")
        ->check(at_least(1));
    runconfig_flag("seed", "--seed", line_.seed, "Random seed (overrides the params' seed)")
        ->check(seed_value());
    runconfig_flag("execution_mode", "--execution_mode", line_.execution_mode,
                   "How the wafer runs the model: auto, pipelined or weight_streaming "
                   "(overrides the params' backend execution_mode)")
        ->check(CLI::IsMember({"auto", "pipelined", "weight_streaming"}));
    app_->add_option("--wafer", line_.wafer, "The wafer plans target: wse2 (CS-2) or wse3 (CS-3)")
        ->check(CLI::IsMember(csrun::modes::wafer_names()));
    std::string points;
    for (const std::string& point : csrun::modes::ir_dump_points())
      points += (points.empty() ? "" : ", ") + point;
    app_->add_option(
            "--dump_ir", line_.dump_ir,
            "Print the IR after a compiler pass (repeatable; trace: before any pass): " + points)
        ->check(CLI::IsMember(csrun::modes::ir_dump_points()))
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    CLI::Option* logging =
        app_->add_option("--logging", line_.logging,
                         "Log level: DEBUG, INFO, WARNING, ERROR or CRITICAL")
            ->transform(
                CLI::IsMember({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}, CLI::ignore_case));
    flags_.push_back(RunconfigFlag{"logging", logging, [this](const SourceMark& mark) {
                                     return Node::make_string(uppercase(line_.logging), mark,
                                                              "runconfig.logging");
                                   }});
    app_->add_option("--set", line_.assignments,
                     "Override any params key: KEY=VALUE with a dotted KEY in the file's layout "
                     "(repeatable), e.g. --set train_input.batch_size=64")
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app_->add_flag("--fake_data", line_.fake_data,
                   "Replace every dataset with synthetic samples of the configured shapes");
    app_->add_flag("--json", line_.json, "Print the result as JSON on stdout");
  }

  CLI::App* app_;
  std::function<int(const csrun::modes::RunOptions&)> run_;
  CommandLine line_;
  std::vector<RunconfigFlag> flags_;
};

// A line about the chosen kernels, or why none are chosen (a CSRUN_CPU this CPU cannot run).
std::string kernels_line(std::string (*summary)()) {
  try {
    return summary();
  } catch (const std::invalid_argument& error) {
    return std::string("none: ") + error.what();
  }
}

// The kernels are chosen at start-up, so a CSRUN_CPU this machine cannot honour stops here.
bool kernels_chosen() {
  try {
    csrun::runtime::selected_kernel_set();
    return true;
  } catch (const std::invalid_argument& error) {
    std::cerr << "csrun: " << error.what() << "\n";
    return false;
  }
}

std::string version_text() {
  std::string sets;
  for (std::string_view name : csrun::runtime::kernel_set_names())
    sets += (sets.empty() ? "" : ", ") + std::string(name);
  return std::string("csrun ") + csrun::kVersion + "\nbuilt " + csrun::kBuildType + " with " +
         csrun::kCompiler + " for " + csrun::kTargetArch + ", kernel sets " + sets +
         "\nbuild id: " + csrun::modes::executable_build_id() +
         "\nkernels: " + kernels_line(csrun::runtime::kernel_set_summary) +
         "\nchains: " + kernels_line(csrun::runtime::chains_summary) +
         "\nsgemm: " + csrun::runtime::sgemm_summary() + "\nlibraries: " + csrun::kLibraries +
         "\nreplicas: " +
         (csrun::replicas::built_with_mpi() ? "one process, or MPI ranks (mpirun, srun --mpi=pmix)"
                                            : "one process (built without MPI)");
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f, a cluster's policy) then fails the write with "File too large",
  // which csrun reports and survives with every earlier file intact, instead of a core dump.
  std::signal(SIGXFSZ, SIG_IGN);
  // A library that crashes on a damaged file (libhdf5) is named with that file.
  csrun::storage::note_fatal_signals();
  CLI::App app{
      "csrun: the Cerebras Model Zoo workflow (validate, compile, train, eval) on any "
      "Linux machine or SLURM cluster.\nParams files are Model Zoo YAML, legacy or trainer "
      "format.",
      "csrun"};
  app.set_version_flag("--version", version_text, "Print the version and exit");
  app.require_subcommand(1);
  // Options bind to members of each Subcommand: they must not move, hence the list.
  std::list<Subcommand> subcommands;
  subcommands.emplace_back(app, "validate",
                           "Check a params file, its data and surroundings; print a summary",
                           csrun::modes::validate);
  subcommands.emplace_back(app, "compile",
                           "Validate, then compile the model into a plan for the wafer",
                           csrun::modes::compile);
  subcommands.emplace_back(app, "train", "Validate, then train on the wafer simulator",
                           csrun::modes::train);
  subcommands.emplace_back(app, "eval", "Validate, then evaluate a checkpoint", csrun::modes::eval);
  csrun::modes::WorkerCommand worker;
  CLI::App* worker_app = app.add_subcommand(
      "worker", "Serve a train or eval coordinator as a data worker (read, shard, send batches)");
  worker_app
      ->add_option("--connect", worker.address,
                   "The coordinator's address (tcp://HOST:PORT or ipc://PATH)")
      ->check(stream_endpoint(false));
  worker_app->add_option("--secret_file", worker.secret_file,
                         "A rendezvous file with the address and the job's secret (else the "
                         "secret comes from CSRUN_STREAM_SECRET)");
  worker_app->add_option("--rank", worker.rank, "This worker's number in logs and the ledger")
      ->check(at_least(0));
  csrun::modes::ConvertCommand convert;
  CLI::App* config_app =
      app.add_subcommand("config", "Work with params files themselves (convert, keys)");
  config_app->require_subcommand(1);
  CLI::App* convert_app = config_app->add_subcommand(
      "convert",
      "Write a params file of any Model Zoo release or layout in the current (2.10) trainer "
      "format, with every migration applied and a comment line per change");
  convert_app->add_option("PARAMS", convert.params_path, "The params YAML file")->required();
  convert_app->add_option("-o,--output", convert.output_path,
                          "Write the converted file here (default: standard output)");
  csrun::modes::KeysCommand keys;
  CLI::App* keys_app = config_app->add_subcommand(
      "keys",
      "Print the keys a network, data processor, optimizer, LR scheduler, callback or logger "
      "accepts, with types and defaults (no NAME: list the names)");
  keys_app->add_option("NAME", keys.name, "What to describe, e.g. gpt2 or AdamW");
  try {
    // CLI11 would say only that a subcommand is required.
    auto subcommand_named = [&app](const std::string& name) {
      std::vector<CLI::App*> all = app.get_subcommands([](CLI::App*) { return true; });
      return std::any_of(all.begin(), all.end(),
                         [&name](CLI::App* subcommand) { return subcommand->check_name(name); });
    };
    if (argc > 1 && argv[1][0] != '-' && !subcommand_named(argv[1])) {
      throw CLI::ValidationError("csrun",
                                 std::string("unknown subcommand '") + argv[1] +
                                     "' (validate, compile, train, eval, worker or config)");
    }
    app.parse(argc, argv);
    if (!kernels_chosen()) return kUsageError;
    if (worker_app->parsed() && worker.address.empty() && worker.secret_file.empty())
      throw CLI::RequiredError("--connect ADDRESS or --secret_file FILE (the coordinator)");
    if (worker_app->parsed()) return csrun::modes::worker(worker);
    if (convert_app->parsed()) return csrun::modes::convert(convert);
    if (keys_app->parsed()) return csrun::modes::keys(keys);
    for (const Subcommand& subcommand : subcommands) {
      if (subcommand.parsed()) return subcommand.run();
    }
  } catch (const CLI::CallForVersion& version) {
    app.exit(version);
    return kernels_chosen() ? 0 : kUsageError;
  } catch (const CLI::ParseError& error) {
    int status = app.exit(error);
    return status == 0 ? 0 : kUsageError;
  } catch (const std::bad_alloc&) {
    std::cerr << "csrun: out of memory\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "csrun: internal error: " << error.what() << "\n";
    return 1;
  }
  return kUsageError;
}
