#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/diagnostics.hpp"
#include "config/params_loader.hpp"

namespace csrun::modes {

// What every subcommand receives from the command line.
struct RunOptions {
  std::string params_path;
  config::LoadOptions load;
  bool fake_data = false;            // synthetic samples instead of the configured datasets
  bool json = false;                 // machine-readable result on stdout
  bool all_checkpoints = false;      // eval: every checkpoint in model_dir
  std::string wafer = "wse2";        // the wafer profile plans target
  std::vector<std::string> dump_ir;  // print the IR after these passes ("trace" = before any)
  std::string sample_ledger;         // train, eval: record every sample consumed in this file
  std::string stream_listen;         // train, eval: wait for data workers at this endpoint
  bool async_checkpoint = false;     // train: write checkpoints while the next steps run
  bool profile = false;              // train, eval: time each host step (host_profile.tsv)
  // validate, compile, train: the training step recomputes each layer's forward values for its
  // backward pass (compiler pass recompute-layers) instead of keeping them.
  bool recompute_layers = false;
  // --checkpoint_path: loaded instead of the checkpoint the params choose, whatever sections the
  // params have (a trainer without a validate section still evaluates it).
  std::string checkpoint_path;
  // The csrun binary local data workers run (`csrun worker`); empty (csrun's libraries used
  // from another program): the data is read in this process.
  std::string worker_binary;
  config::Severity shown = config::Severity::note;  // the least severe finding printed
};

// Each returns the process exit status: 0 on success, 1 on a user-facing error (already
// reported on stderr, and in the JSON result with --json).
// What --wafer and --dump_ir accept.
std::vector<std::string> wafer_names();
std::vector<std::string> ir_dump_points();

int validate(const RunOptions& options);
int compile(const RunOptions& options);
int train(const RunOptions& options);
int eval(const RunOptions& options);

// csrun config convert: the params file in the current (2.10) trainer format.
struct ConvertCommand {
  std::string params_path;
  std::string output_path;  // empty: standard output
  config::Severity shown = config::Severity::note;
};
int convert(const ConvertCommand& command);

// csrun config keys: the keys a network, data processor or class accepts (none named: the names).
struct KeysCommand {
  std::string name;
};
int keys(const KeysCommand& command);

// csrun worker: a data worker for the coordinator at `address`.
struct WorkerCommand {
  std::string address;      // empty: the rendezvous file's
  std::string secret_file;  // a rendezvous file; empty: the secret is in CSRUN_STREAM_SECRET
  std::int64_t rank = -1;
};
int worker(const WorkerCommand& command);

}  // namespace csrun::modes
