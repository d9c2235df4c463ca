// RunSpec: JSON round trip, validation messages and conversion of CLI-style text values.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "qt_test_main.h"
#include "run_spec.h"
#include "spec_flags.h"

using namespace ddpdesk;

// CLI11 takes its argument vector last first.
std::vector<std::string> reversed(std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());
  return args;
}

// The spec a `ddpdesk` command line builds, through the flags both programs share.
std::vector<std::string> buildFromArgs(const std::vector<std::string>& args, RunSpec* out) {
  CLI::App app;
  SpecFlags flags(app, true);
  app.parse(reversed(args));
  std::vector<std::string> lines;
  for (const FieldError& e : flags.build(*out)) lines.push_back(format_error(e));
  return lines;
}

class TestRunSpec : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void defaultsAreValid() { QVERIFY(validate(RunSpec{}).empty()); }

  // Task python: the script is required, script_args' placeholders are known ones, and the
  // worker (which cannot run a script) refuses the task in one line.
  void pythonScriptFields() {
    RunSpec s;
    s.task = "python";
    auto errors = validate(s);
    QCOMPARE(int(errors.size()), 1);
    QCOMPARE(QString::fromStdString(format_error(errors[0], Spelling::Flag)),
             QStringLiteral("invalid --script '': is required with task python: the training "
                            "script to run"));
    s.script = "train.py";
    s.script_args = "--bs {batch_size} --x {bogus} {run_dir} {} {1,2} { {";
    errors = validate(s);
    QCOMPARE(int(errors.size()), 1);
    QCOMPARE(QString::fromStdString(errors[0].field), QStringLiteral("script_args"));
    QVERIFY2(QString::fromStdString(errors[0].allowed)
                 .startsWith(QStringLiteral("has the unknown placeholder {bogus} (known: "
                                            "{batch_size} {accum_steps} {epochs} {lr}")),
             errors[0].allowed.c_str());
    s.script_args =
        "--bs {batch_size} {accum_steps} {epochs} {lr} {seed} {nproc} {run_dir} "
        "{resume} {} {1,2} {";
    QVERIFY(validate(s).empty());
    QCOMPARE(unknown_placeholder("{a}{batch_size}"), std::string("{a}"));
    s.launcher = "slurm";  // a Slurm job of the script's ranks: fine
    QVERIFY(validate(s).empty());
    s.slurm_login = "user@login";  // through a login node: the cluster's absolute paths
    s.python = "venv/bin/python";
    errors = validate(s);
    QCOMPARE(int(errors.size()), 2);
    QCOMPARE(QString::fromStdString(errors[0].field), QStringLiteral("script"));
    QCOMPARE(QString::fromStdString(errors[1].field), QStringLiteral("python"));
    QCOMPARE(QString::fromStdString(format_error(errors[0], Spelling::Flag)),
             QStringLiteral("invalid --script 'train.py': must be an absolute path on the "
                            "cluster with slurm_login (the login node's files, not this "
                            "machine's)"));
    s.script = "/home/u/train.py";
    s.python = "python3";  // the nodes' own
    QVERIFY(validate(s).empty());
    s.script = "train.py";
    s.slurm_login.clear();
    s.launcher = "local";
    const auto worker = validate_for_worker(s);
    QCOMPARE(int(worker.size()), 1);
    QCOMPARE(QString::fromStdString(worker[0].field), QStringLiteral("task"));
    // Another task ignores the script's fields the form keeps (to switch back).
    s.task = "seed";
    s.script_args = "{bogus}";
    QCOMPARE(int(validate(s).size()), 1);  // still a bad value of the field itself
    s.script_args.clear();
    QVERIFY(validate(s).empty() && validate_for_worker(s).empty());
  }

  void roundTripsThroughJson() {
    RunSpec s;
    s.task = "fmnist-cnn";
    s.nproc = 3;
    s.batch_size = 17;
    s.accum_steps = 5;
    s.lr = 0.0025;
    s.seed = 1234567890123LL;
    s.run_dir = "/tmp/x y";
    SpecResult r = parse_run_spec(to_json_text(s));
    QVERIFY(r.ok());
    QCOMPARE(to_json(r.spec), to_json(s));
    QCOMPARE(r.spec.effective_batch(), qint64(3 * 17 * 5));
  }

  void convertsTextValues() {
    RunSpec s;
    auto errs = apply_fields({{"batch_size", "32"}, {"lr", "1e-4"}, {"task", "fmnist-mlp"}}, s);
    QVERIFY(errs.empty());
    QCOMPARE(s.batch_size, 32);
    QCOMPARE(s.lr, 1e-4);
    QCOMPARE(s.task, std::string("fmnist-mlp"));
  }

  void rejectsBadValues_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("zero batch") << R"({"batch_size":0})"
                                << "invalid batch_size '0': must be an integer from 1 to 65536";
    QTest::newRow("text batch") << R"({"batch_size":"abc"})"
                                << "invalid batch_size 'abc': must be an integer";
    QTest::newRow("fraction") << R"({"accum_steps":2.5})"
                              << "invalid accum_steps '2.5': must be an integer";
    QTest::newRow("task")
        << R"({"task":"resnet"})"
        << "invalid task 'resnet': must be one of seed, fmnist-mlp, fmnist-cnn, script, python";
    QTest::newRow("device") << R"({"device":"tpu"})"
                            << "invalid device 'tpu': must be cpu or cuda";
    QTest::newRow("precision") << R"({"precision":"fp8"})"
                               << "invalid precision 'fp8': must be one of fp32, bf16, fp16";
    QTest::newRow("fp16 on cpu")
        << R"({"precision":"fp16"})"
        << "invalid precision 'fp16': must be fp32 or bf16 on device cpu (fp16 autocast needs "
           "cuda)";
    QTest::newRow("lr") << R"({"lr":0})"
                        << "invalid lr '0': must be a number greater than 0 and at most 10";
    QTest::newRow("unknown") << R"({"bach_size":4})"
                             << "invalid bach_size '4': is not a run spec field";
    // Integers too large for the field (or for any int64) are told the range, quoted as given.
    QTest::newRow("huge int")
        << R"({"epochs":99999999999})"
        << "invalid epochs '99999999999': must be an integer from 1 to 100000";
    QTest::newRow("seed past int64")
        << R"({"seed":9223372036854775808})"
        << "invalid seed '9223372036854775808': must be an integer from 0 to 9223372036854775807";
    QTest::newRow("seed at uint64 max")
        << R"({"seed":18446744073709551615})"
        << "invalid seed '18446744073709551615': must be an integer from 0 to 9223372036854775807";
    QTest::newRow("seed text past int64")
        << R"({"seed":"-9223372036854775809"})"
        << "invalid seed '-9223372036854775809': must be an integer from 0 to 9223372036854775807";
    QTest::newRow("seed far past int64")
        << R"({"seed":1e30})"
        << "invalid seed '1e+30': must be an integer from 0 to 9223372036854775807";
    QTest::newRow("tensorboard 2") << R"({"tensorboard":2})"
                                   << "invalid tensorboard '2': must be 0 or 1";
    QTest::newRow("tensorboard yes") << R"({"tensorboard":"yes"})"
                                     << "invalid tensorboard 'yes': must be 0 or 1";
    QTest::newRow("fit_batch 2") << R"({"fit_batch":2})"
                                 << "invalid fit_batch '2': must be 0 or 1";
    QTest::newRow("fit_batch auto") << R"({"fit_batch":"auto"})"
                                    << "invalid fit_batch 'auto': must be 0 or 1";
    QTest::newRow("fit_batch python")
        << R"({"task":"python","script":"train.py","fit_batch":1})"
        << "invalid fit_batch '1': must be 0 for task python (the script sets its own batch)";
    QTest::newRow("cuda_graph on cpu")
        << R"({"cuda_graph":1})"
        << "invalid cuda_graph '1': must be 0 on device cpu (CUDA graphs need cuda)";
    QTest::newRow("cuda_graph seed")
        << R"({"device":"cuda","cuda_graph":1})"
        << "invalid cuda_graph '1': must be 0 for task seed (recorded: fmnist-mlp, fmnist-cnn, "
           "script, whose samples have fixed shapes)";
    QTest::newRow("cuda_graph python")
        << R"({"device":"cuda","task":"python","script":"train.py","cuda_graph":1})"
        << "invalid cuda_graph '1': must be 0 for task python (recorded: fmnist-mlp, fmnist-cnn, "
           "script, whose samples have fixed shapes)";
    QTest::newRow("system too fast")
        << R"({"system_interval":0.05})"
        << "invalid system_interval '0.05': must be 0 (off) or a number from 0.1 to 3600";
    QTest::newRow("system negative")
        << R"({"system_interval":-1})"
        << "invalid system_interval '-1': must be 0 (off) or a number from 0.1 to 3600";
    // One limit for ranks on a machine: the shared-memory communicator's (kMaxLocalRanks).
    QTest::newRow("nproc past shared memory")
        << R"({"nproc":65})"
        << "invalid nproc '65': must be an integer from 1 to 64";
    // Fashion-MNIST has 60000 training images: the spec says so, not the trainer mid-setup.
    QTest::newRow("fmnist past its images")
        << R"({"task":"fmnist-cnn","dataset_size":60001})"
        << "invalid dataset_size '60001': must be at most 60000 for Fashion-MNIST (its training "
           "images)";
  }

  void rankAndImageLimitsAcceptTheirBounds() {
    RunSpec s;
    s.nproc = kMaxLocalRanks;
    QVERIFY(validate(s).empty());
    s.nproc = 1;
    s.task = "fmnist-mlp";
    s.dataset_size = kFmnistTrainImages;
    QVERIFY(validate(s).empty());
    s.task = "seed";  // the seed task generates its samples: its own, larger bound
    s.dataset_size = kFmnistTrainImages + 1;
    QVERIFY(validate(s).empty());
  }

  // One GPU per rank, one wording for the worker, headless mode and the GUI form.
  void gpuRule() {
    RunSpec s;
    s.device = "cpu";
    QVERIFY(validate_gpus(s, 8, 0).empty());  // CPU runs do not care
    s.device = "cuda";
    QVERIFY(validate_gpus(s, 2, 2).empty());
    QVERIFY(validate_gpus(s, 1, 8).empty());
    auto none = validate_gpus(s, 1, 0);
    QCOMPARE(none.size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(format_error(none[0], Spelling::Flag)),
             QStringLiteral("invalid --device 'cuda': needs a CUDA GPU and this machine has none"));
    auto few = validate_gpus(s, 3, 2);
    QCOMPARE(few.size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(format_error(few[0], Spelling::Flag)),
             QStringLiteral("invalid --nproc '3': must be at most 2: a CUDA run uses one GPU per "
                            "rank and this machine has 2 GPU(s)"));
  }

  // Seconds between system samples: on by default (1 s), 0 switches it off.
  void systemInterval() {
    QCOMPARE(RunSpec().system_interval, 1.0);
    for (const char* ok : {"0", "0.1", "2.5", "3600"}) {
      RunSpec s;
      QVERIFY(apply_fields({{"system_interval", ok}}, s).empty());
      QVERIFY2(validate(s).empty(), ok);
    }
    RunSpec s;
    QVERIFY(apply_fields({{"system_interval", "0"}}, s).empty());
    QCOMPARE(s.system_interval, 0.0);
    QCOMPARE(to_json(s)["system_interval"], nlohmann::json(0.0));
  }
  void rejectsBadValues() {
    QFETCH(QString, json);
    QFETCH(QString, message);
    SpecResult r = parse_run_spec(json.toStdString());
    QVERIFY(!r.ok());
    QCOMPARE(r.errors.size(), size_t(1));
    QCOMPARE(QString::fromStdString(format_error(r.errors[0], Spelling::JsonKey)), message);
  }

  // A 0/1 field: the flags' 0 and 1, JSON's true and false; written back as 0 or 1.
  void booleanField() {
    const std::vector<std::pair<nlohmann::json, bool>> cases = {
        {"1", true},  {"0", false},   {1, true},      {0, false},
        {true, true}, {false, false}, {"true", true}, {"false", false}};
    for (const auto& [value, want] : cases) {
      RunSpec s;
      s.tensorboard = !want;
      QVERIFY(apply_fields({{"tensorboard", value}}, s).empty());
      QCOMPARE(s.tensorboard, want);
      QCOMPARE(to_json(s)["tensorboard"], nlohmann::json(want ? 1 : 0));
    }
    QCOMPARE(to_json(RunSpec())["tensorboard"], nlohmann::json(0));
    QCOMPARE(to_json(RunSpec())["fit_batch"], nlohmann::json(0));
    RunSpec fit;
    QVERIFY(apply_fields({{"fit_batch", "1"}}, fit).empty());
    QVERIFY(fit.fit_batch);
    QVERIFY(validate(fit).empty());
    RunSpec graphed;
    QVERIFY(apply_fields({{"device", "cuda"}, {"task", "fmnist-cnn"}, {"cuda_graph", "1"}}, graphed)
                .empty());
    QVERIFY(graphed.cuda_graph);
    QVERIFY(validate(graphed).empty());
    QCOMPARE(to_json(RunSpec())["cuda_graph"], nlohmann::json(0));
    bool listed = false;
    for (const FieldInfo& f : run_spec_fields()) {
      QCOMPARE(f.boolean,
               std::string(f.key) == "tensorboard" || std::string(f.key) == "slurm_requeue" ||
                   std::string(f.key) == "fit_batch" || std::string(f.key) == "cuda_graph");
      listed = listed || f.boolean;
    }
    QVERIFY(listed);
  }

  // A rank started on its own writes TensorBoard files only into a run directory.
  void workerRules() {
    RunSpec s;
    QVERIFY(validate_for_worker(s).empty());
    s.tensorboard = true;
    QVERIFY(validate(s).empty());  // the monitor gives its ranks a run directory
    const auto errors = validate_for_worker(s);
    QCOMPARE(errors.size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(format_error(errors[0], Spelling::Flag)),
             QStringLiteral("invalid --tensorboard '1': needs a run directory (run_dir): the "
                            "event files go to <run_dir>/tb"));
    s.run_dir = "/tmp/run";
    QVERIFY(validate_for_worker(s).empty());
  }

  // Flags take their values as text: a number past int64 is quoted as typed, with the range.
  void flagsOutOfRange() {
    for (const char* seed :
         {"9223372036854775808", "18446744073709551615", "99999999999999999999"}) {
      RunSpec spec;
      const auto problems = buildFromArgs({"--seed", seed}, &spec);
      QCOMPARE(problems.size(), std::size_t(1));
      QCOMPARE(QString::fromStdString(problems[0]),
               QString("invalid --seed '%1': must be an integer from 0 to 9223372036854775807")
                   .arg(seed));
    }
    CLI::App app;
    SpecFlags flags(app, true);
    std::vector<std::string> args = {"12"};
    args.push_back("--seed");
    app.parse(args);
    RunSpec spec;
    QVERIFY(flags.build(spec).empty());
    QCOMPARE(spec.seed, std::int64_t(12));
  }

  // An on/off field is a flag: alone it is on, even before another flag; a 0/1 after it (as the
  // monitor writes the worker's command line) or --no-X still say which, and --no-X wins over a
  // config file that turned it on.
  void onOffFlags() {
    struct Case {
      std::vector<std::string> args;
      bool tensorboard;
      std::string name;
    };
    const std::vector<Case> cases = {
        {{}, false, ""},
        {{"--tensorboard"}, true, ""},
        {{"--tensorboard", "--name", "x"}, true, "x"},
        {{"--name", "x", "--tensorboard"}, true, "x"},
        {{"--tensorboard", "1"}, true, ""},
        {{"--tensorboard", "0", "--name", "x"}, false, "x"},
        {{"--tensorboard=0"}, false, ""},
        {{"--tensorboard=1"}, true, ""},
        {{"--tensorboard=true"}, true, ""},
        {{"--no-tensorboard"}, false, ""},
    };
    for (const Case& c : cases) {
      RunSpec spec;
      const auto problems = buildFromArgs(c.args, &spec);
      QVERIFY2(problems.empty(), problems.empty() ? "" : problems[0].c_str());
      QCOMPARE(spec.tensorboard, c.tensorboard);
      QCOMPARE(spec.name, c.name);
    }
    RunSpec spec;
    auto problems = buildFromArgs({"--tensorboard", "yes"}, &spec);
    QCOMPARE(problems.size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(problems[0]),
             QStringLiteral("invalid --tensorboard 'yes': must be 0 or 1"));
    {
      CLI::App app;
      SpecFlags flags(app, true);
      QVERIFY_THROWS_EXCEPTION(CLI::ExcludesError,
                               app.parse(reversed({"--tensorboard", "--no-tensorboard"})));
    }
    // Every 0/1 field has both spellings, on the worker's command line as on the monitor's.
    for (const bool withNproc : {true, false}) {
      CLI::App app;
      SpecFlags flags(app, withNproc);
      for (const FieldInfo& f : run_spec_fields()) {
        const std::string flag = field_label(f.key, Spelling::Flag);
        QCOMPARE(app.get_option_no_throw("--no-" + flag.substr(2)) != nullptr, f.boolean);
      }
    }
    QTemporaryDir dir;
    const QString config = dir.filePath(QStringLiteral("on.json"));
    QFile file(config);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"tensorboard": 1, "name": "from-config"})");
    file.close();
    problems = buildFromArgs({"--config", config.toStdString(), "--no-tensorboard"}, &spec);
    QVERIFY(problems.empty());
    QCOMPARE(spec.tensorboard, false);
    QCOMPARE(spec.name, std::string("from-config"));
    problems = buildFromArgs({"--config", config.toStdString()}, &spec);
    QVERIFY(problems.empty());
    QCOMPARE(spec.tensorboard, true);
  }

  // A problem is a structure (field, value, why, and the file it came from) with one line for
  // it: a flag's spelled as the flag, a config file's as its key and the file named.
  void problemsAreStructured() {
    QTemporaryDir dir;
    const std::string config = dir.filePath(QStringLiteral("c.json")).toStdString();
    std::ofstream(config) << R"({"batch_size": 0, "name": "c"})";
    CLI::App app;
    SpecFlags flags(app, true);
    app.parse(reversed({"--config", config, "--accum-steps", "0"}));
    RunSpec spec;
    const auto problems = flags.build(spec);
    QCOMPARE(problems.size(), std::size_t(2));
    QCOMPARE(problems[0].field, std::string("batch_size"));
    QCOMPARE(problems[0].value, std::string("0"));
    QCOMPARE(problems[0].source, config);
    QCOMPARE(QString::fromStdString(format_error(problems[0])),
             QString::fromStdString("invalid batch_size '0': " + problems[0].allowed + " (in " +
                                    config + ")"));
    QCOMPARE(problems[1].field, std::string("accum_steps"));
    QVERIFY(problems[1].source.empty());
    QCOMPARE(QString::fromStdString(format_error(problems[1])),
             QString::fromStdString("invalid --accum-steps '0': " + problems[1].allowed));
    QVERIFY(problems[1].allowed.rfind("must be ", 0) == 0);
    // The config flag itself: no file behind it, spelled as the flag.
    QVERIFY(buildFromArgs({"--config", config + ".missing"}, &spec).size() == 1);
    QCOMPARE(QString::fromStdString(buildFromArgs({"--config", config + ".missing"}, &spec)[0]),
             QString::fromStdString("invalid --config '" + config + ".missing': cannot be read"));
  }

  // A JSON value as text, the one rule: strings bare, numbers round-trip (a whole one without
  // ".0"), NaN and infinities named.
  void valueText() {
    const std::vector<std::pair<nlohmann::json, std::string>> cases = {
        {"a b", "a b"},
        {3, "3"},
        {-7, "-7"},
        {10.0, "10"},
        {0.1, "0.1"},
        {0.123456789, "0.123456789"},
        {1.0 / 3, "0.3333333333333333"},
        {1e-20, "1e-20"},
        {std::nan(""), "nan"},
        {-std::numeric_limits<double>::infinity(), "-inf"},
        {true, "true"},
        {nlohmann::json::object({{"a", 1}}), R"({"a":1})"},
        {nlohmann::json::array({1, "x"}), R"([1,"x"])"},
    };
    for (const auto& [value, text] : cases) {
      QCOMPARE(QString::fromStdString(field_value_text(value)), QString::fromStdString(text));
      // A number's text reads back as the same number.
      if (value.is_number() && std::isfinite(value.get<double>()))
        QCOMPARE(std::stod(text), value.get<double>());
    }
  }

  void flagSpelling() {
    QCOMPARE(QString::fromStdString(field_label("accum_steps", Spelling::Flag)),
             QString("--accum-steps"));
  }

  void notJson() {
    QVERIFY(!parse_run_spec("{").parse_error.empty());
    QVERIFY(!parse_run_spec("[1,2]").parse_error.empty());
  }
};

DDPDESK_TEST_APPLESS_MAIN(TestRunSpec)
#include "test_run_spec.moc"
