// The run spec's field table (run_spec_fields.h): every field's key, kind, help and rule.
#include "run_spec_fields.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

namespace ddpdesk::spec_fields {
namespace {

using json = nlohmann::json;

std::string check_int(std::int64_t v, std::int64_t lo, std::int64_t hi) {
  return v >= lo && v <= hi ? std::string() : integer_range_text(lo, hi);
}

std::string check_real(double v, double lo, double hi, bool lo_open) {
  bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi;
  if (ok) return {};
  std::ostringstream os;
  os << "must be a number " << (lo_open ? "greater than " : "from ") << lo
     << (lo_open ? " and at most " : " to ") << hi;
  return os.str();
}

constexpr std::int64_t kMaxI64 = std::numeric_limits<std::int64_t>::max();

#define INT_FIELD(member, key, help, lo, hi)                                              \
  Field {                                                                                 \
    key, Kind::Int, help, [](const RunSpec& s) { return json(s.member); },                \
        [](RunSpec& s, const json& v) { s.member = v.get<decltype(RunSpec::member)>(); }, \
        [](const RunSpec& s) { return check_int(s.member, lo, hi); }, lo, hi              \
  }

#define TEXT_FIELD(member, key, help)                                       \
  Field {                                                                   \
    key, Kind::Text, help, [](const RunSpec& s) { return json(s.member); }, \
        [](RunSpec& s, const json& v) { s.member = v.get<std::string>(); }, \
        [](const RunSpec&) { return std::string(); }                        \
  }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

// Slurm names (partition, account): what sbatch takes without quoting trouble.
std::string check_slurm_name(const std::string& name) {
  if (name.size() > 64) return "must be at most 64 characters of letters, digits, '_', '-', '.'";
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return "must be empty (the default) or letters, digits, '_', '-', '.'";
  return {};
}

std::string check_tensor_name(const std::string& name) {
  return !name.empty() && name.size() <= 256 ? "" : "must be a tensor name of 1 to 256 characters";
}

}  // namespace

std::string integer_range_text(std::int64_t lo, std::int64_t hi) {
  return "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
}

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      {"task", Kind::Text,
       "seed | fmnist-mlp | fmnist-cnn | script (your TorchScript model) | python (your script)",
       [](const RunSpec& s) { return json(s.task); },
       [](RunSpec& s, const json& v) { s.task = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return find_task(s.task) ? "" : "must be one of " + join(known_tasks());
       }},
      {"device", Kind::Text, "cpu | cuda", [](const RunSpec& s) { return json(s.device); },
       [](RunSpec& s, const json& v) { s.device = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return s.device == "cpu" || s.device == "cuda" ? "" : "must be cpu or cuda";
       }},
      {"precision", Kind::Text,
       "fp32 | bf16 (autocast; CPU and CUDA) | fp16 (autocast and a dynamic loss scale; CUDA)",
       [](const RunSpec& s) { return json(s.precision); },
       [](RunSpec& s, const json& v) { s.precision = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         if (s.precision == "fp16" && s.device == "cpu")
           return "must be fp32 or bf16 on device cpu (fp16 autocast needs cuda)";
         for (const auto& p : known_precisions())
           if (s.precision == p) return {};
         return "must be one of " + join(known_precisions());
       }},
      INT_FIELD(nproc, "nproc", "ranks (processes) on this machine", 1, kMaxLocalRanks),
      INT_FIELD(batch_size, "batch_size", "samples per rank per micro-step", 1, 65536),
      INT_FIELD(accum_steps, "accum_steps", "micro-steps per optimizer step", 1, 65536),
      {"fit_batch", Kind::Bool,
       "before training, find the largest micro-batch that fits in every rank's memory and "
       "accumulate more steps of it, the effective batch unchanged (1 or given alone: on; 0: "
       "off)",
       [](const RunSpec& s) { return json(s.fit_batch ? 1 : 0); },
       [](RunSpec& s, const json& v) { s.fit_batch = v.get<int>() != 0; },
       [](const RunSpec& s) -> std::string {
         const TaskInfo* t = find_task(s.task);
         return s.fit_batch && t && t->python_script
                    ? "must be 0 for task python (the script sets its own batch)"
                    : "";
       }},
      {"cuda_graph", Kind::Bool,
       "record each training micro-step and optimizer step once as CUDA graphs and replay them "
       "(cuda; fmnist-mlp, fmnist-cnn, and script models that draw no random numbers; 1 or "
       "given alone: on; 0: off)",
       [](const RunSpec& s) { return json(s.cuda_graph ? 1 : 0); },
       [](RunSpec& s, const json& v) { s.cuda_graph = v.get<int>() != 0; },
       [](const RunSpec& s) -> std::string {
         if (!s.cuda_graph) return {};
         if (s.device != "cuda")
           return "must be 0 on device " + s.device + " (CUDA graphs need cuda)";
         const TaskInfo* t = find_task(s.task);
         if (!t || t->capturable) return {};
         std::vector<std::string> recorded;
         for (const TaskInfo& c : task_catalog())
           if (c.capturable) recorded.push_back(c.name);
         return "must be 0 for task " + s.task + " (recorded: " + join(recorded) +
                ", whose samples have fixed shapes)";
       }},
      INT_FIELD(epochs, "epochs", "passes over the training set", 1, 100000),
      {"lr", Kind::Real, "Adam learning rate", [](const RunSpec& s) { return json(s.lr); },
       [](RunSpec& s, const json& v) { s.lr = v.get<double>(); },
       [](const RunSpec& s) { return check_real(s.lr, 0.0, 10.0, true); }},
      {"weight_decay", Kind::Real, "Adam L2 weight decay",
       [](const RunSpec& s) { return json(s.weight_decay); },
       [](RunSpec& s, const json& v) { s.weight_decay = v.get<double>(); },
       [](const RunSpec& s) { return check_real(s.weight_decay, 0.0, 1.0, false); }},
      INT_FIELD(seed, "seed", "seed for data, shuffling and initialisation", 0, kMaxI64),
      INT_FIELD(dataset_size, "dataset_size",
                "training samples (seed: generated; fmnist: first N images); 0 = task default", 0,
                100000000),
      INT_FIELD(log_interval, "log_interval", "optimizer steps between step messages", 1, 1000000),
      {"run_dir", Kind::Text, "directory for checkpoints (empty: none)",
       [](const RunSpec& s) { return json(s.run_dir); },
       [](RunSpec& s, const json& v) { s.run_dir = v.get<std::string>(); },
       [](const RunSpec&) { return std::string(); }},
      {"resume", Kind::Text, "run directory or checkpoint file to continue from",
       [](const RunSpec& s) { return json(s.resume); },
       [](RunSpec& s, const json& v) { s.resume = v.get<std::string>(); },
       [](const RunSpec&) { return std::string(); }},
      {"metrics_file", Kind::Text, "JSONL file receiving every wire message of this rank",
       [](const RunSpec& s) { return json(s.metrics_file); },
       [](RunSpec& s, const json& v) { s.metrics_file = v.get<std::string>(); },
       [](const RunSpec&) { return std::string(); }},
      INT_FIELD(checkpoint_every, "checkpoint_every",
                "optimizer steps between periodic checkpoints (0: off)", 0, 100000000),
      {"checkpoint_minutes", Kind::Real, "minutes between periodic checkpoints (0: off)",
       [](const RunSpec& s) { return json(s.checkpoint_minutes); },
       [](RunSpec& s, const json& v) { s.checkpoint_minutes = v.get<double>(); },
       [](const RunSpec& s) { return check_real(s.checkpoint_minutes, 0.0, 100000.0, false); }},
      INT_FIELD(keep_checkpoints, "keep_checkpoints", "periodic checkpoints kept", 1, 1000),
      {"max_restarts", Kind::Int,
       "restarts from the latest checkpoint when a rank fails after training started (0: off; "
       "turns on a checkpoint every 10 minutes unless checkpoints are set)",
       [](const RunSpec& s) { return json(s.max_restarts); },
       [](RunSpec& s, const json& v) { s.max_restarts = v.get<int>(); },
       [](const RunSpec& s) -> std::string {
         if (std::string e = check_int(s.max_restarts, 0, 100); !e.empty()) return e;
         if (s.max_restarts > 0 && s.is_slurm())
           return "must be 0 for a Slurm run (ddpdesk restarts local runs only)";
         return {};
       },
       0, 100},
      {"restart_backoff", Kind::Real,
       "seconds before the first restart, doubled before each next one (at most 300)",
       [](const RunSpec& s) { return json(s.restart_backoff); },
       [](RunSpec& s, const json& v) { s.restart_backoff = v.get<double>(); },
       [](const RunSpec& s) { return check_real(s.restart_backoff, 0.0, 300.0, false); }},
      {"collective_timeout", Kind::Real, "seconds a collective waits for a peer",
       [](const RunSpec& s) { return json(s.collective_timeout); },
       [](RunSpec& s, const json& v) { s.collective_timeout = v.get<double>(); },
       [](const RunSpec& s) { return check_real(s.collective_timeout, 0.5, 86400.0, false); }},
      {"system_interval", Kind::Real, "seconds between samples of CPU, memory and GPU use (0: off)",
       [](const RunSpec& s) { return json(s.system_interval); },
       [](RunSpec& s, const json& v) { s.system_interval = v.get<double>(); },
       [](const RunSpec& s) -> std::string {
         // Sampling faster than 10 Hz would cost more than it tells; 0 switches it off.
         if (s.system_interval == 0 || check_real(s.system_interval, 0.1, 3600.0, false).empty())
           return "";
         return "must be 0 (off) or a number from 0.1 to 3600";
       }},
      {"tensorboard", Kind::Bool,
       "write TensorBoard event files into <run_dir>/tb (1 or given alone: on; 0: off)",
       [](const RunSpec& s) { return json(s.tensorboard ? 1 : 0); },
       [](RunSpec& s, const json& v) { s.tensorboard = v.get<int>() != 0; },
       [](const RunSpec&) { return std::string(); }},
      {"name", Kind::Text, "label for the run", [](const RunSpec& s) { return json(s.name); },
       [](RunSpec& s, const json& v) { s.name = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return s.name.size() <= 64 && s.name.find('/') == std::string::npos
                    ? ""
                    : "must be at most 64 characters without '/'";
       }},
      {"on_end", Kind::Text,
       "a shell command the monitor runs when the run ends (DDPDESK_RUN_DIR, DDPDESK_STATUS, "
       "DDPDESK_EXIT_CODE, DDPDESK_RUN_NAME, DDPDESK_REASON set; empty: none)",
       [](const RunSpec& s) { return json(s.on_end); },
       [](RunSpec& s, const json& v) { s.on_end = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         // One line: it is shown in the form's one-line field and logged in monitor.log.
         return s.on_end.size() <= 4096 && s.on_end.find_first_of("\r\n") == std::string::npos
                    ? ""
                    : "must be one line of at most 4096 characters";
       }},
      TEXT_FIELD(model, "model", "task script: TorchScript model file (torch.jit.script(m).save)"),
      TEXT_FIELD(train_data, "train_data",
                 "task script: training tensors (.safetensors or torch.save zip)"),
      TEXT_FIELD(eval_data, "eval_data", "task script: validation tensors (optional)"),
      {"loss", Kind::Text, "task script: cross_entropy | mse | bce | model (per_sample_loss)",
       [](const RunSpec& s) { return json(s.loss); },
       [](RunSpec& s, const json& v) { s.loss = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         for (const auto& l : known_losses())
           if (s.loss == l) return {};
         return "must be one of " + join(known_losses());
       }},
      {"input_name", Kind::Text, "task script: name of the input tensor in the data files",
       [](const RunSpec& s) { return json(s.input_name); },
       [](RunSpec& s, const json& v) { s.input_name = v.get<std::string>(); },
       [](const RunSpec& s) { return check_tensor_name(s.input_name); }},
      {"target_name", Kind::Text, "task script: name of the target tensor in the data files",
       [](const RunSpec& s) { return json(s.target_name); },
       [](RunSpec& s, const json& v) { s.target_name = v.get<std::string>(); },
       [](const RunSpec& s) { return check_tensor_name(s.target_name); }},
      TEXT_FIELD(script, "script", "task python: your training script (.py), run as every rank"),
      {"script_args", Kind::Text,
       "task python: the script's arguments; {batch_size} {accum_steps} {epochs} {lr} {seed} "
       "{nproc} {run_dir} {resume} are filled in",
       [](const RunSpec& s) { return json(s.script_args); },
       [](RunSpec& s, const json& v) { s.script_args = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         const std::string bad = unknown_placeholder(s.script_args);
         if (bad.empty()) return {};
         std::string known;
         for (const auto& p : script_placeholders())
           known += (known.empty() ? "{" : " {") + p + "}";
         return "has the unknown placeholder " + bad + " (known: " + known + ")";
       }},
      TEXT_FIELD(python, "python",
                 "task python: the Python interpreter (empty: python3 on PATH, e.g. a venv's)"),
      TEXT_FIELD(workdir, "workdir",
                 "task python: the ranks' working directory (empty: the run directory)"),
      {"loss_pattern", Kind::Text,
       "task python: a regular expression for printed losses, with a group (?<loss>...) and "
       "optionally (?<step>...) (empty: loss=, loss:, dicts, tqdm bars)",
       [](const RunSpec& s) { return json(s.loss_pattern); },
       [](RunSpec& s, const json& v) { s.loss_pattern = v.get<std::string>(); },
       // The monitor, which reads the output, compiles the expression and finds its groups
       // (OutputLossReader, before the run starts): a compile error is told as such.
       [](const RunSpec&) { return std::string(); }},
      TEXT_FIELD(logdir, "logdir",
                 "task python: the TensorBoard log directory the script writes, charted live "
                 "(empty: event files found under the working directory)"),
      {"launcher", Kind::Text, "local (processes on this machine) | slurm (an sbatch job)",
       [](const RunSpec& s) { return json(s.launcher); },
       [](RunSpec& s, const json& v) { s.launcher = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return s.launcher == "local" || s.launcher == "slurm" ? "" : "must be local or slurm";
       }},
      INT_FIELD(slurm_nodes, "slurm_nodes", "slurm: nodes of the job", 1, 100000),
      INT_FIELD(slurm_tasks_per_node, "slurm_tasks_per_node", "slurm: ranks per node", 1,
                kMaxLocalRanks),
      {"slurm_partition", Kind::Text, "slurm: partition (empty: the cluster's default)",
       [](const RunSpec& s) { return json(s.slurm_partition); },
       [](RunSpec& s, const json& v) { s.slurm_partition = v.get<std::string>(); },
       [](const RunSpec& s) { return check_slurm_name(s.slurm_partition); }},
      {"slurm_time", Kind::Text, "slurm: time limit, e.g. 30, 1:30:00, 2-0 (empty: the default)",
       [](const RunSpec& s) { return json(s.slurm_time); },
       [](RunSpec& s, const json& v) { s.slurm_time = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return is_slurm_time(s.slurm_time)
                    ? ""
                    : "must be empty or minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S (sbatch --time)";
       }},
      {"slurm_account", Kind::Text, "slurm: account to charge (empty: your default)",
       [](const RunSpec& s) { return json(s.slurm_account); },
       [](RunSpec& s, const json& v) { s.slurm_account = v.get<std::string>(); },
       [](const RunSpec& s) { return check_slurm_name(s.slurm_account); }},
      {"slurm_extra", Kind::Text,
       "slurm: more sbatch options, ';' between them (e.g. --qos=debug;--gres=gpu:4)",
       [](const RunSpec& s) { return json(s.slurm_extra); },
       [](RunSpec& s, const json& v) { s.slurm_extra = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         for (const auto& o : slurm_extra_options(s.slurm_extra)) {
           // One #SBATCH line each: an option, and nothing a line break could smuggle in.
           if (o.size() < 2 || o[0] != '-') return "must be sbatch options starting with '-'";
           if (o.find('\'') != std::string::npos || o.find('"') != std::string::npos)
             return "must not contain quotes (each option becomes one #SBATCH line)";
         }
         return {};
       }},
      {"slurm_requeue", Kind::Bool,
       "slurm: the job requeues on node failure and resumes from the newest checkpoint (1 or "
       "given alone: on; 0: off; turns on a checkpoint every 10 minutes unless checkpoints are "
       "set)",
       [](const RunSpec& s) { return json(s.slurm_requeue ? 1 : 0); },
       [](RunSpec& s, const json& v) { s.slurm_requeue = v.get<int>() != 0; },
       [](const RunSpec& s) -> std::string {
         return s.slurm_requeue && !s.is_slurm() ? "must be 0 unless launcher is slurm" : "";
       }},
      {"slurm_login", Kind::Text,
       "slurm: submit through this login node over ssh, [user@]host[:port] (empty: sbatch here)",
       [](const RunSpec& s) { return json(s.slurm_login); },
       [](RunSpec& s, const json& v) { s.slurm_login = v.get<std::string>(); },
       [](const RunSpec& s) { return check_slurm_login(s.slurm_login); }},
      {"slurm_remote_dir", Kind::Text,
       "slurm via a login node: the run directory on the cluster (empty: ~/ddpdesk-runs/<run>)",
       [](const RunSpec& s) { return json(s.slurm_remote_dir); },
       [](RunSpec& s, const json& v) { s.slurm_remote_dir = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         const std::string& d = s.slurm_remote_dir;
         if (d.empty()) return {};
         if (s.slurm_login.empty()) return "must be empty unless slurm_login is set";
         // #SBATCH lines take no quotes: a blank would split --output's path.
         if (d.find_first_of(" \t\n'\"") != std::string::npos)
           return "must be a path without blanks or quotes";
         if (d[0] != '/' && d.rfind("~/", 0) != 0)
           return "must be an absolute path or one starting with ~/ (the home directory there)";
         return {};
       }},
  };
  return table;
}

const Field* find_field(const std::string& key) {
  for (const auto& f : fields())
    if (key == f.key) return &f;
  return nullptr;
}

}  // namespace ddpdesk::spec_fields
