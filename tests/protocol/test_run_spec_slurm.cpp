// RunSpec's launcher fields: defaults, JSON round trip, the world a Slurm job makes, and the
// one-line errors for bad values (time limits in sbatch's formats, names, extra options).
#include <QtTest>

#include <nlohmann/json.hpp>

#include "qt_test_main.h"
#include "run_spec.h"

using namespace ddpdesk;

class TestRunSpecSlurm : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void defaultIsLocal() {
    RunSpec s;
    QCOMPARE(s.launcher, std::string("local"));
    QVERIFY(!s.is_slurm());
    s.nproc = 3;
    QCOMPARE(s.world_size(), 3);
  }

  void slurmWorldIsNodesTimesTasks() {
    RunSpec s;
    s.nproc = 7;  // ignored by a Slurm job
    s.launcher = "slurm";
    s.slurm_nodes = 3;
    s.slurm_tasks_per_node = 4;
    s.batch_size = 8;
    s.accum_steps = 2;
    QCOMPARE(s.world_size(), 12);
    QCOMPARE(s.effective_batch(), qint64(12 * 8 * 2));
  }

  void roundTripsThroughJson() {
    RunSpec s;
    s.launcher = "slurm";
    s.slurm_nodes = 2;
    s.slurm_tasks_per_node = 4;
    s.slurm_partition = "gpu-a";
    s.slurm_time = "1-12:00";
    s.slurm_account = "proj.42";
    s.slurm_extra = "--qos=debug;--gres=gpu:4";
    s.slurm_requeue = true;
    SpecResult r = parse_run_spec(to_json_text(s));
    QVERIFY(r.ok());
    QCOMPARE(to_json(r.spec), to_json(s));
    QCOMPARE(r.spec.slurm_time, std::string("1-12:00"));
  }

  void timeFormats_data() {
    QTest::addColumn<QString>("time");
    QTest::addColumn<bool>("ok");
    for (const char* t : {"", "30", "30:15", "1:30:00", "2-0", "2-12", "2-12:30", "2-12:30:05"})
      QTest::newRow(t) << t << true;
    for (const char* t : {"1:2:3:4", "abc", "-5", "1-", "1:", "1.5", "2-1-1", "5 min"})
      QTest::newRow(t) << t << false;
  }
  void timeFormats() {
    QFETCH(QString, time);
    QFETCH(bool, ok);
    QCOMPARE(is_slurm_time(time.toStdString()), ok);
    RunSpec s;
    s.slurm_time = time.toStdString();
    QCOMPARE(validate_field(s, "slurm_time").empty(), ok);
  }

  void rejectsBadValues_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("launcher") << R"({"launcher":"pbs"})"
                              << "invalid launcher 'pbs': must be local or slurm";
    QTest::newRow("nodes") << R"({"slurm_nodes":0})"
                           << "invalid slurm_nodes '0': must be an integer from 1 to 100000";
    QTest::newRow("tasks") << R"({"slurm_tasks_per_node":65})"
                           << "invalid slurm_tasks_per_node '65': must be an integer from 1 to 64";
    QTest::newRow("time")
        << R"({"slurm_time":"1:2:3:4"})"
        << "invalid slurm_time '1:2:3:4': must be empty or minutes, M:S, H:M:S, D-H, D-H:M or "
           "D-H:M:S (sbatch --time)";
    QTest::newRow("partition")
        << R"({"slurm_partition":"a b"})"
        << "invalid slurm_partition 'a b': must be empty (the default) or letters, digits, '_', "
           "'-', '.'";
    QTest::newRow("account") << R"({"slurm_account":"x;rm"})"
                             << "invalid slurm_account 'x;rm': must be empty (the default) or "
                                "letters, digits, '_', '-', '.'";
    QTest::newRow("extra not an option")
        << R"({"slurm_extra":"--qos=x;gres"})"
        << "invalid slurm_extra '--qos=x;gres': must be sbatch options starting with '-'";
    QTest::newRow("extra quotes")
        << R"({"slurm_extra":"--comment='x'"})"
        << "invalid slurm_extra '--comment='x'': must not contain quotes (each option becomes "
           "one #SBATCH line)";
    QTest::newRow("login an option")
        << R"({"slurm_login":"-oProxyCommand=x"})"
        << "invalid slurm_login '-oProxyCommand=x': must be [user@]host[:port] (letters, digits, "
           "'.', '_', '-'), or empty for sbatch here";
    QTest::newRow("login blank") << R"({"slurm_login":"a b"})"
                                 << "invalid slurm_login 'a b': must be [user@]host[:port] "
                                    "(letters, digits, '.', '_', '-'), or empty for sbatch here";
    QTest::newRow("login port")
        << R"({"slurm_login":"me@login:70000"})"
        << "invalid slurm_login 'me@login:70000': must have a port from 1 to 65535";
    QTest::newRow("remote dir without login")
        << R"({"slurm_remote_dir":"/scratch/r"})"
        << "invalid slurm_remote_dir '/scratch/r': must be empty unless slurm_login is set";
    QTest::newRow("remote dir relative")
        << R"({"slurm_login":"login","slurm_remote_dir":"runs/r"})"
        << "invalid slurm_remote_dir 'runs/r': must be an absolute path or one starting with ~/ "
           "(the home directory there)";
    QTest::newRow("remote dir blank")
        << R"({"slurm_login":"login","slurm_remote_dir":"/a b"})"
        << "invalid slurm_remote_dir '/a b': must be a path without blanks or quotes";
    QTest::newRow("requeue without slurm")
        << R"({"slurm_requeue":1})"
        << "invalid slurm_requeue '1': must be 0 unless launcher is slurm";
    QTest::newRow("requeue 2") << R"({"launcher":"slurm","slurm_requeue":2})"
                               << "invalid slurm_requeue '2': must be 0 or 1";
    QTest::newRow("dataset below the job's ranks")
        << R"({"launcher":"slurm","slurm_nodes":2,"slurm_tasks_per_node":4,"dataset_size":5})"
        << "invalid dataset_size '5': must be 0 or at least the Slurm job's ranks (8)";
  }
  void rejectsBadValues() {
    QFETCH(QString, json);
    QFETCH(QString, message);
    SpecResult r = parse_run_spec(json.toStdString());
    QVERIFY(!r.ok());
    QCOMPARE(QString::fromStdString(format_error(r.errors.front(), Spelling::JsonKey)), message);
  }

  void loginForms() {
    RunSpec s;
    for (const char* ok : {"", "login", "me@login.hpc.example.org", "me@10.0.0.1:2222", "a_b@h-1"})
      QVERIFY2(check_slurm_login(ok).empty(), ok);
    s.launcher = "slurm";
    QVERIFY(!s.is_slurm_via_login());
    s.slurm_login = "me@login";
    QVERIFY(s.is_slurm_via_login());
    s.slurm_remote_dir = "~/runs/r1";
    QVERIFY(validate(s).empty());
    s.launcher = "local";  // a login node only matters to Slurm runs
    QVERIFY(!s.is_slurm_via_login());
    QVERIFY(is_launcher_field("slurm_login"));
    QVERIFY(is_launcher_field("slurm_remote_dir"));
  }

  void flagsSpellTheFields() {
    QCOMPARE(field_label("slurm_tasks_per_node", Spelling::Flag),
             std::string("--slurm-tasks-per-node"));
    QVERIFY(is_launcher_field("launcher"));
    QVERIFY(is_launcher_field("slurm_extra"));
    QVERIFY(is_launcher_field("slurm_requeue"));
    QCOMPARE(field_label("slurm_requeue", Spelling::Flag), std::string("--slurm-requeue"));
    QVERIFY(!is_launcher_field("nproc"));
  }

  // A requeued job resumes from a checkpoint: requeue brings periodic ones, as max_restarts does.
  void requeueTurnsCheckpointsOn() {
    RunSpec s;
    s.launcher = "slurm";
    QCOMPARE(with_restart_checkpoints(s).checkpoint_minutes, 0.0);
    s.slurm_requeue = true;
    QCOMPARE(with_restart_checkpoints(s).checkpoint_minutes, kRestartCheckpointMinutes);
    s.checkpoint_every = 50;
    QCOMPARE(with_restart_checkpoints(s).checkpoint_minutes, 0.0);  // the user's own
  }

  void extraOptionsSplit() {
    const auto o = slurm_extra_options(" --qos=debug ;\n--gres=gpu:4;; \n--exclusive ");
    QCOMPARE(o.size(), std::size_t(3));
    QCOMPARE(o[0], std::string("--qos=debug"));
    QCOMPARE(o[1], std::string("--gres=gpu:4"));
    QCOMPARE(o[2], std::string("--exclusive"));
    QVERIFY(slurm_extra_options("  ; \n").empty());
  }
};

DDPDESK_TEST_APPLESS_MAIN(TestRunSpecSlurm)
#include "test_run_spec_slurm.moc"
