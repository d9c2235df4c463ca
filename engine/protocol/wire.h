// The wire format between a worker rank and the monitor: newline-delimited JSON, one message per
// line, versioned by the hello message. This codec is the only place that knows the shapes; the
// worker encodes with it and the monitor decodes with it. See docs/wire-format.md.
// Open for growth: a line of a type this codec does not know, or a field it does not know, is
// ignored (and counted by the reader), never malformed; so a newer worker can add both without
// breaking an older monitor, and the version range in the hello is only for real breaks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace ddpdesk::wire {

// The version this codec writes in the hello's "v", and the range of versions it reads. Two peers
// get along when their ranges overlap (wire::compatible()).
constexpr int kVersion = 1;
constexpr int kMinVersion = 1;
constexpr int kMaxVersion = 1;
// Longest line a reader has to accept; anything longer is a misbehaving peer.
constexpr std::size_t kMaxLineBytes = 64 * 1024;

struct Hello {
  int v = kVersion;
  std::string token;
  int rank = 0;
  int world = 1;
  std::int64_t pid = 0;
  std::string host;
  std::string device;
  // Versions this peer speaks; a hello without them (older workers) speaks just `v`.
  int v_min = kMinVersion;
  int v_max = kMaxVersion;
};

// Where a rank's optimizer steps went, in milliseconds per step averaged over the log interval
// (host wall time: on CUDA, kernels run asynchronously and their time shows up wherever the
// host next waits for the device, usually comm). The parts add up to `step`.
struct StepTimes {
  double data = 0;       // sampling, collation, host-to-device copies
  double forward = 0;    // forward and loss
  double backward = 0;   // backward compute (hooks launch overlapped allreduces from here)
  double comm = 0;       // exposed communication: blocked on allreduces / broadcasts
  double optimizer = 0;  // optimizer step, zeroing gradients
  double telemetry = 0;  // building and queueing messages, progress lines
  // A training script's (the Python client's ddpdesk.phase): the step's time outside every part
  // it measured; and whether it measured comm at all (a DDP script's allreduces usually run
  // inside backward, unmeasured). The worker measures every part: other 0, comm measured.
  double other = 0;
  bool comm_measured = true;
  double step = 0;
  long steps = 0;  // optimizer steps averaged over
};

struct Step {
  int rank = 0;
  int epoch = 0;
  std::int64_t step = 0;     // optimizer steps done since the run began (across resumes)
  double loss = 0;           // this rank's mean loss over the window
  double global_loss = 0;    // mean over every rank's samples of the window
  std::int64_t samples = 0;  // global samples trained so far
  double lr = 0;
  double time = 0;           // seconds since the rank started training
  double samples_per_s = 0;  // global samples/s over the last log interval
  // Diagnostics, sent only when the worker runs with DDPDESK_DEBUG_STEPS=1 (tests use them):
  std::int64_t collectives = -1;   // collectives this rank has issued so far
  std::string param_hash;          // hash of every parameter's bytes after this step
  std::string buffer_hash;         // hash of every buffer's bytes after this step (if any)
  std::optional<StepTimes> times;  // "time_ms": the step breakdown
};

struct Eval {
  int rank = 0;
  int epoch = 0;
  std::int64_t step = 0;
  double loss = 0;
  std::optional<double> accuracy;  // classification tasks only
  std::int64_t samples = 0;        // validation samples evaluated (global)
  double time = 0;
};

// Events: started | epoch | checkpoint | stopping | finished (and a few more, see the doc).
struct Event {
  int rank = 0;
  std::string event;
  int epoch = 0;
  std::int64_t step = 0;
  std::string path;              // checkpoint path, when there is one
  std::string detail;            // free text: reason for stopping, resume source, ...
  std::int64_t total_steps = 0;  // set on "started": optimizer steps the whole run will take
  double time = 0;
};

struct Error {
  int rank = 0;
  std::string message;
  int peer = -1;  // the rank whose loss made this one fail (a dead peer), -1 when none is known
};

// One sample of a named quantity: the generic carrier for metrics that need no code of their own
// in the monitor (system and GPU metrics; see docs/wire-format.md for the names in use). The
// monitor keeps a time series per (rank, name).
struct Gauge {
  int rank = 0;
  std::string name;       // what is measured, units in the name too: cpu_percent, rss_bytes, ...
  double value = 0;       // non-finite: null on the wire
  std::string unit;       // for display: "%", "B", "W", "C", or empty for counts
  double time = 0;        // seconds on the rank's training clock (as Step::time)
  std::int64_t step = 0;  // optimizer steps done when the value was taken
};
constexpr std::size_t kMaxGaugeName = 128;

using Message = std::variant<Hello, Step, Eval, Event, Error, Gauge>;

// One JSON object, no trailing newline. Non-finite numbers are written as null.
std::string encode(const Message& m);

struct Decoded {
  // What every reader (the socket, a rank's file, metrics.jsonl) does with the line, one rule:
  //   Blank      nothing: an empty line, not an error
  //   Ignored    a newer peer's message type: counted, kept in the record, not an error
  //   Malformed  counted and reported (`error` says why)
  //   Message    taken (its unknown fields counted)
  enum class Kind { Blank, Ignored, Malformed, Message };
  Kind kind = Kind::Blank;
  std::optional<Message> message;
  std::string error;  // why the line was rejected (malformed), when message is empty
  // A well-formed line this codec does not understand (a newer peer's message type): not an
  // error, nothing decoded; says what was ignored, e.g. "unknown type 'foo'".
  std::string ignored;
  // Fields of the decoded message that this codec does not know (ignored), and the first one's
  // name ("time_ms.foo" inside an object), for a log line.
  int unknown_fields = 0;
  std::string unknown_field;
};
// Decodes one line (a trailing '\n' or '\r' is ignored). Never throws.
Decoded decode(std::string_view line);

const char* type_name(const Message& m);
int rank_of(const Message& m);
// Whether a peer's version range overlaps the one this codec reads.
bool compatible(const Hello& h);

}  // namespace ddpdesk::wire
