// A Python-script rank's command and environment (local/script_rank.h): the script's arguments
// split as a shell splits them, the spec's placeholders filled word by word, torchrun's
// variables and the DDPDESK_* values; and, with the real python3, that the script receives
// exactly those words and variables.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "local/script_rank.h"
#include "qt_test_main.h"

using namespace ddpdesk;

class TestScriptRank : public QObject {
  Q_OBJECT

  static RunSpec pythonSpec() {
    RunSpec s;
    s.task = "python";
    s.script = "/work/train.py";
    s.nproc = 3;
    s.batch_size = 16;
    s.accum_steps = 4;
    s.epochs = 2;
    s.lr = 0.001;
    s.seed = 7;
    return s;
  }

 private Q_SLOTS:
  void splitsAsAShellDoes_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("words");
    QTest::newRow("plain") << "--a 1  --b\t2" << QStringList{"--a", "1", "--b", "2"};
    QTest::newRow("single quotes")
        << "--name 'two words' x" << QStringList{"--name", "two words", "x"};
    QTest::newRow("double quotes")
        << "--msg \"say \\\"hi\\\" \\\\ ok\"" << QStringList{"--msg", "say \"hi\" \\ ok"};
    QTest::newRow("joined parts") << "--x=a'b c'\"d\"" << QStringList{"--x=ab cd"};
    QTest::newRow("backslash blank") << "a\\ b c" << QStringList{"a b", "c"};
    QTest::newRow("empty word") << "--resume ''" << QStringList{"--resume", ""};
    QTest::newRow("nothing") << "   " << QStringList{};
  }
  void splitsAsAShellDoes() {
    QFETCH(QString, text);
    QFETCH(QStringList, words);
    QString error;
    QCOMPARE(splitShellWords(text, &error), words);
    QVERIFY2(error.isEmpty(), qPrintable(error));
  }

  void anUnclosedQuoteIsOneLine() {
    QString error;
    QVERIFY(splitShellWords(QStringLiteral("--name 'open"), &error).isEmpty());
    QCOMPARE(error, QStringLiteral("an unclosed ' quote"));
    RunSpec s = pythonSpec();
    s.script_args = "--msg \"open";
    const ScriptRank r = scriptRank(s, QStringLiteral("/runs/a"), QString());
    QCOMPARE(r.error, QStringLiteral("invalid --script-args: an unclosed \" quote"));
    QVERIFY(r.program.isEmpty() && r.arguments.isEmpty());
  }

  void placeholdersAreFilledWordByWord() {
    RunSpec s = pythonSpec();
    s.precision = "bf16";
    s.script_args =
        "--bs {batch_size} --accum={accum_steps} --epochs {epochs} --lr {lr} --seed {seed} "
        "--amp {precision} --world {nproc} --out {run_dir}/ckpt --resume '{resume}' --keep "
        "{notone} {";
    const QString runDir = QStringLiteral("/runs/my run");  // a blank: still one word
    const ScriptRank r = scriptRank(s, runDir, QStringLiteral("/runs/old"));
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QCOMPARE(r.program, QStringLiteral("python3"));
    QCOMPARE(r.arguments, (QStringList{"/work/train.py",
                                       "--bs",
                                       "16",
                                       "--accum=4",
                                       "--epochs",
                                       "2",
                                       "--lr",
                                       "0.001",
                                       "--seed",
                                       "7",
                                       "--amp",
                                       "bf16",
                                       "--world",
                                       "3",
                                       "--out",
                                       "/runs/my run/ckpt",
                                       "--resume",
                                       "/runs/old",
                                       "--keep",
                                       "{notone}",
                                       "{"}));
    QCOMPARE(r.workdir, runDir);
  }

  // Relative paths are the monitor's (where the person typed them), not the run directory's.
  void pathsBecomeAbsolute() {
    RunSpec s = pythonSpec();
    s.script = "train.py";
    s.workdir = "data";
    s.python = "venv/bin/python";
    makeScriptPathsAbsolute(s);
    const QString here = QDir::currentPath();
    QCOMPARE(QString::fromStdString(s.script), here + QStringLiteral("/train.py"));
    QCOMPARE(QString::fromStdString(s.workdir), here + QStringLiteral("/data"));
    QCOMPARE(QString::fromStdString(s.python), here + QStringLiteral("/venv/bin/python"));
    s.python = "python3.11";  // a name: looked up on PATH, left as it is
    makeScriptPathsAbsolute(s);
    QCOMPARE(s.python, std::string("python3.11"));
  }

  void interpreterAndWorkdirAreTheSpecsWhenGiven() {
    RunSpec s = pythonSpec();
    s.python = "/opt/venv/bin/python";
    s.workdir = "/work";
    s.launcher = "slurm";
    s.slurm_nodes = 2;
    s.slurm_tasks_per_node = 4;
    s.script_args = "{nproc}";
    const ScriptRank r = scriptRank(s, QStringLiteral("/runs/a"), QString());
    QCOMPARE(r.program, QStringLiteral("/opt/venv/bin/python"));
    QCOMPARE(r.workdir, QStringLiteral("/work"));
    QCOMPARE(r.arguments, (QStringList{"/work/train.py", "8"}));  // every rank of the job
  }

  void environmentCarriesTorchrunsRestAndTheSpec() {
    QProcessEnvironment inherited;
    inherited.insert(QStringLiteral("PYTHONPATH"), QStringLiteral("/mine"));
    const QProcessEnvironment env = scriptEnvironment(
        pythonSpec(), 2, 3, QStringLiteral("/runs/a"), QString(), QStringLiteral("run-1"),
        QStringLiteral("/share/ddpdesk/python"), inherited);
    const auto is = [&env](const char* name, const char* value) {
      return env.value(QString::fromLatin1(name)) == QString::fromLatin1(value);
    };
    QVERIFY(is("GROUP_RANK", "0") && is("GROUP_WORLD_SIZE", "1"));
    QVERIFY(is("ROLE_RANK", "2") && is("ROLE_WORLD_SIZE", "3") && is("ROLE_NAME", "default"));
    QVERIFY(is("TORCHELASTIC_RUN_ID", "run-1") && is("TORCHELASTIC_RESTART_COUNT", "0"));
    QVERIFY(is("DDPDESK_BATCH_SIZE", "16") && is("DDPDESK_ACCUM_STEPS", "4"));
    QVERIFY(is("DDPDESK_EPOCHS", "2") && is("DDPDESK_LR", "0.001") && is("DDPDESK_SEED", "7"));
    QVERIFY(is("DDPDESK_RUN_DIR", "/runs/a") && is("DDPDESK_PRECISION", "fp32"));
    QVERIFY(!env.contains(QStringLiteral("DDPDESK_RESUME")));  // a fresh run: not set at all
    QVERIFY(is("PYTHONPATH", "/share/ddpdesk/python:/mine"));
    QVERIFY(is("PYTHONUNBUFFERED", "1"));
    // The agent's store is torchrun's alone: a script run's rank 0 hosts the TCPStore itself.
    QVERIFY(!env.contains(QStringLiteral("TORCHELASTIC_USE_AGENT_STORE")));
    const QProcessEnvironment resumed =
        scriptEnvironment(pythonSpec(), 0, 3, QStringLiteral("/runs/b"), QStringLiteral("/runs/a"),
                          QStringLiteral("run-2"), QStringLiteral("/c"), QProcessEnvironment());
    QCOMPARE(resumed.value(QStringLiteral("DDPDESK_RESUME")), QStringLiteral("/runs/a"));
    QCOMPARE(resumed.value(QStringLiteral("PYTHONPATH")), QStringLiteral("/c"));
  }

  // The real interpreter sees the words and variables as meant.
  void pythonReceivesExactlyThoseWords() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString script = dir.filePath(QStringLiteral("show.py"));
    QFile f(script);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        "import json, os, sys\n"
        "print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(),\n"
        "  'bs': os.environ['DDPDESK_BATCH_SIZE'], 'path': sys.path[1],\n"
        "  'buffered': sys.stdout.line_buffering or not os.environ.get('PYTHONUNBUFFERED')}))\n");
    f.close();
    RunSpec s = pythonSpec();
    s.script = script.toStdString();
    s.script_args = "--out '{run_dir}/x y' --lr={lr}";
    const QString runDir = dir.filePath(QStringLiteral("run dir"));
    QVERIFY(QDir().mkpath(runDir));
    const ScriptRank r = scriptRank(s, runDir, QString());
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(scriptEnvironment(s, 0, 1, runDir, QString(), QStringLiteral("r"),
                                 QStringLiteral("/client"), env));
    p.setProcessEnvironment(env);
    p.setWorkingDirectory(r.workdir);
    p.start(r.program, r.arguments);
    QVERIFY2(p.waitForFinished(30000), "python3 did not finish");
    QCOMPARE(p.exitCode(), 0);
    const QJsonObject o = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QCOMPARE(o.value(QStringLiteral("argv")).toVariant().toStringList(),
             (QStringList{"--out", runDir + QStringLiteral("/x y"), "--lr=0.001"}));
    QCOMPARE(o.value(QStringLiteral("cwd")).toString(), runDir);
    QCOMPARE(o.value(QStringLiteral("bs")).toString(), QStringLiteral("16"));
    QCOMPARE(o.value(QStringLiteral("path")).toString(), QStringLiteral("/client"));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestScriptRank)
#include "test_script_rank.moc"
