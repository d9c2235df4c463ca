// RunSpec: the one description of a training run, shared by the GUI form, the CLI flags and
// JSON config files. Every front door fills a RunSpec through apply_fields() and checks it with
// validate(), so the rules and the error wording exist exactly once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ddpdesk {

// Ranks on one machine: nproc's upper bound, and what the shared-memory communicator holds.
constexpr int kMaxLocalRanks = 64;
// Fashion-MNIST's training images: the largest dataset_size its tasks take.
constexpr std::int64_t kFmnistTrainImages = 60000;

struct RunSpec {
  std::string task =
      "seed";  // one of task_catalog(): seed | fmnist-mlp | fmnist-cnn | script | python
  std::string device = "cpu";  // cpu | cuda
  // The forward's precision: fp32, or autocast to bf16 (CPU and CUDA) or fp16 (CUDA, with a
  // dynamic loss scale). Parameters, gradients and the optimizer stay float32 (docs/gpu.md).
  std::string precision = "fp32";
  int nproc = 1;        // ranks on this machine (monitor / headless only)
  int batch_size = 4;   // per rank, per micro-step
  int accum_steps = 1;  // micro-steps per optimizer step
  // Before training, the largest micro-batch (a divisor of batch_size x accum_steps, at most
  // batch_size) that fits in every rank's memory is found, and the accumulation steps set so the
  // effective batch stays batch_size x accum_steps per rank (docs/gpu.md).
  bool fit_batch = false;
  bool cuda_graph = false;  // record the training step as CUDA graphs (graphed_step.h)
  int epochs = 1;
  double lr = 1e-3;
  double weight_decay = 0.0;
  std::int64_t seed = 0;
  std::int64_t dataset_size = 0;  // 0 = the task's default (seed: 900, fmnist: 60000)
  int log_interval = 1;           // optimizer steps between step messages
  std::string run_dir;            // checkpoints go here; empty = no checkpoints
  std::string resume;             // run dir or checkpoint file to continue from
  std::string metrics_file;       // JSONL copy of every wire message this rank sends
  int checkpoint_every = 0;       // optimizer steps between periodic checkpoints; 0 = off
  double checkpoint_minutes = 0;  // minutes between periodic checkpoints; 0 = off
  int keep_checkpoints = 3;       // periodic checkpoints kept on disk
  // Automatic restarts (monitor only): a run whose rank fails after training started restarts
  // every rank from its latest checkpoint, up to max_restarts times, waiting restart_backoff
  // seconds before the first and twice as long before each next (at most 5 minutes).
  int max_restarts = 0;
  double restart_backoff = 1.0;
  double collective_timeout = 60.0;  // seconds a collective may wait for a peer
  double system_interval = 1.0;      // seconds between system metric samples; 0 = off
  bool tensorboard = false;          // TensorBoard event files under <run_dir>/tb
  std::string name;                  // free text label for the run (monitor only)
  // A shell command the monitor runs once the run has ended (monitor only; never for a run it
  // follows): ui/monitor/run/end_command.h.
  std::string on_end;
  // The user's task (task "script"): a scripted TorchScript module and tensor data files
  // (safetensors or torch.save zip), the loss, and the tensor names inside the data files.
  std::string model;                   // torch.jit.script(...).save() file
  std::string train_data;              // tensors keyed input_name / target_name
  std::string eval_data;               // optional; empty = no validation
  std::string loss = "cross_entropy";  // cross_entropy | mse | bce | model
  std::string input_name = "inputs";
  std::string target_name = "targets";
  // The user's Python training script (task "python"): started as the ranks are, with
  // torchrun's environment (docs/python-scripts.md). script_args is split as a shell would
  // (quotes group words) and its {placeholders} (script_placeholders()) filled from the spec.
  std::string script;       // the .py file
  std::string script_args;  // e.g. "--epochs {epochs} --bs {batch_size}"
  std::string python;       // the interpreter; empty: python3 on PATH
  std::string workdir;      // the ranks' working directory; empty: the run directory
  // Where the monitor reads a script's metrics when it does not use the client: a regular
  // expression for its printed losses (a group named loss, optionally one named step; empty:
  // the built-in forms of ui/monitor/metrics/output_loss.h), and the TensorBoard log directory it
  // writes (empty: event files found under the working directory).
  std::string loss_pattern;
  std::string logdir;
  // Who starts the ranks: "local" (processes on this machine, nproc of them) or "slurm" (a batch
  // job of slurm_nodes x slurm_tasks_per_node ranks, submitted with sbatch; docs/cluster.md).
  std::string launcher = "local";
  int slurm_nodes = 1;
  int slurm_tasks_per_node = 2;
  std::string slurm_partition;  // empty: the cluster's default partition
  std::string slurm_time;       // sbatch --time (e.g. 30, 1:00:00, 2-0); empty: the default
  std::string slurm_account;    // empty: the user's default account
  std::string slurm_extra;      // more sbatch options, ';' or newline between them
  // The job requeues on node failure (#SBATCH --requeue) and its ranks resume from the run's
  // newest checkpoint; the monitor follows the requeued job as the same run (docs/recovery.md).
  bool slurm_requeue = false;
  // A login node to drive Slurm through over ssh ([user@]host[:port]); empty: sbatch here. With
  // one, run_dir is the local record of the run (the history entry) and slurm_remote_dir the
  // run directory on the cluster (empty: ~/ddpdesk-runs/<record's name> there).
  std::string slurm_login;
  std::string slurm_remote_dir;

  bool is_slurm() const { return launcher == "slurm"; }
  // A Slurm run submitted through a login node over ssh (docs/cluster.md).
  bool is_slurm_via_login() const { return is_slurm() && !slurm_login.empty(); }
  // Ranks of the whole run: nproc on this machine, or every task of the Slurm job.
  int world_size() const { return is_slurm() ? slurm_nodes * slurm_tasks_per_node : nproc; }
  std::int64_t effective_batch() const {
    return static_cast<std::int64_t>(world_size()) * batch_size * accum_steps;
  }
  // Whether evaluation reports an accuracy (the task's or, for "script", the loss's kind).
  bool is_classification() const;
  std::int64_t resolved_dataset_size() const;
};

// Restarts resume from a checkpoint: a spec with max_restarts (or slurm_requeue: a requeued
// job's restart) and no periodic checkpoints gets one every kRestartCheckpointMinutes
// (with_restart_checkpoints(), applied when a run starts).
constexpr double kRestartCheckpointMinutes = 10.0;
RunSpec with_restart_checkpoints(RunSpec spec);

// One invalid value: which field (its JSON key, or the name of a flag that is no spec field,
// like "config"), the value as given, and why it is refused. Every "invalid <flag> '<value>':
// <why>" line is format_error() of one; what reads such a line back (the window under a field)
// takes `allowed` from the structure, never from the text.
struct FieldError {
  FieldError() = default;
  FieldError(std::string field, std::string value, std::string allowed, std::string source = {})
      : field(std::move(field)),
        value(std::move(value)),
        allowed(std::move(allowed)),
        source(std::move(source)) {}
  std::string field;
  std::string value;
  std::string allowed;  // why: "must be ...", "no such file", ...
  std::string source;   // the config file the value came from; empty: a flag, the form, ...
};

// How a field is spelled to the person who typed it.
enum class Spelling { Flag, JsonKey };
std::string field_label(const std::string& key,
                        Spelling spelling);  // "--batch-size" / "batch_size"
// One line, no newline: "invalid <field spelled> '<value>': <allowed>", then " (in <source>)"
// for a value from a file.
std::string format_error(const FieldError& e, Spelling spelling);
// The same, spelled for where the value came from: a file's as its JSON key, else as a flag.
std::string format_error(const FieldError& e);
// A JSON value as text, the one way everywhere (an error message, a worker's command line, a
// comparison's cell, the form): strings bare, the rest as JSON writes it (numbers round-trip)
// but a whole number without ".0" (10, as typed) and NaN, infinities as "nan", "inf" (JSON
// would print null).
std::string field_value_text(const nlohmann::json& v);

// Checks ranges and choices. Returns every problem, empty when the spec is good.
std::vector<FieldError> validate(const RunSpec& spec);
// The problems of one field only (the GUI shows them next to the field).
std::vector<FieldError> validate_field(const RunSpec& spec, const std::string& key);

// One GPU per rank: whether a CUDA spec fits a machine with `gpus` visible GPUs (0 without CUDA)
// when `ranks_here` of its ranks run there. The monitor asks with nproc and the probe's count,
// the worker with its local world and LibTorch's count; both report this one error. Empty for
// CPU specs and when it fits.
std::vector<FieldError> validate_gpus(const RunSpec& spec, int ranks_here, int gpus);

// Rules for a rank started on its own (ddpdesk-worker): what needs the run directory it was
// given. The monitor always gives its ranks one, so the GUI form and headless mode skip these.
std::vector<FieldError> validate_for_worker(const RunSpec& spec);

// Applies a JSON object of fields onto `spec`. Values may be JSON numbers/strings/bools or, as
// the CLI passes them, strings to convert. Unknown keys and unconvertible values are errors.
std::vector<FieldError> apply_fields(const nlohmann::json& fields, RunSpec& spec);

nlohmann::json to_json(const RunSpec& spec);
std::string to_json_text(const RunSpec& spec, int indent = 2);

// Parses a complete config text (a JSON object) onto defaults and validates it.
struct SpecResult {
  RunSpec spec;
  std::vector<FieldError> errors;
  std::string parse_error;  // set when the text is not a JSON object at all
  bool ok() const { return errors.empty() && parse_error.empty(); }
};
SpecResult parse_run_spec(const std::string& json_text);

// Every field key, in display order, with a one-line description (used for --help and docs).
struct FieldInfo {
  const char* key;
  const char* help;
  bool boolean = false;  // 0 or 1 (JSON also takes true/false): a checkbox in the GUI
  bool numeric = false;  // an integer or real number: a sweep may vary it
};
const std::vector<FieldInfo>& run_spec_fields();

// The one table of tasks: the RunSpec's check, the flags' help and the GUI's task list read it;
// the engine maps each name to its implementation (and a test checks that every name has one).
struct TaskInfo {
  const char* name;
  const char* description;
  bool classification;         // reports accuracy (for "script": decided by the loss)
  bool user_files;             // trains the user's model and data files (model, train_data, ...)
  bool python_script = false;  // the ranks run the user's Python script, not ddpdesk-worker
  // Fixed-shape samples and a forward that reads nothing back: a training micro-step can be
  // recorded as a CUDA graph (RunSpec::cuda_graph) unless the model draws random numbers
  // (Task::capturable decides that: the user's model by its graph).
  bool capturable = false;
};
const std::vector<TaskInfo>& task_catalog();
const TaskInfo* find_task(const std::string& name);
const std::vector<std::string>& known_tasks();  // the catalog's names, in order
// The losses of the user's task: cross_entropy (class ids), mse, bce (on logits), model (the
// module's own per_sample_loss(output, target)).
const std::vector<std::string>& known_losses();
// The precisions of the forward (RunSpec::precision), in the order the form lists them.
const std::vector<std::string>& known_precisions();
// Fields that only the user's task reads (shown by the GUI only for it).
bool is_user_task_field(const std::string& key);
// Fields of the Python-script task (script, script_args, python, workdir): shown by the GUI only
// for it, never passed to ddpdesk-worker.
bool is_script_field(const std::string& key);
// The placeholders script_args may hold, without braces, in the order the docs list them:
// batch_size, accum_steps, epochs, lr, seed, nproc, run_dir, resume.
const std::vector<std::string>& script_placeholders();
// The first {name} in `text` that is no placeholder, with its braces ("{bogus}"); empty when
// every one is known. A brace that opens no {name} is left to the script ("{", "{}", "{1,2}").
std::string unknown_placeholder(const std::string& text);
// Fields that say how the ranks are launched (launcher, slurm_*): the monitor reads them, the
// worker's command line never needs them.
bool is_launcher_field(const std::string& key);
// Fields only the monitor acts on (nproc, on_end, max_restarts, restart_backoff): a rank's
// command line (the worker's, a copied torchrun line) never carries them.
bool is_monitor_field(const std::string& key);
// sbatch's --time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (or empty). The one check, shared
// by the spec and the batch-script writer's tests.
bool is_slurm_time(const std::string& text);
// slurm_login's form, [user@]host[:port]: empty when `text` is one (or empty), else what is
// allowed.
std::string check_slurm_login(const std::string& text);
// The extra sbatch options of slurm_extra, one per item, trimmed, empty items dropped.
std::vector<std::string> slurm_extra_options(const std::string& text);

}  // namespace ddpdesk
