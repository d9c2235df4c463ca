// The "Copy launch command" builders: torchrun and srun lines for a RunSpec.
#include <QProcess>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "form/launch_command.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {
// What Debian's torchrun (torch.distributed.run) reads from `line` pasted into a shell: its own
// argument parser run on the words, with NODE_RANK=1 and MASTER_ADDR=node0 set; `fields` is the
// Python list of what to print (of the parsed `a`). Empty when python3-torch is missing.
QString parsedByTorchrun(const QString& line, const QString& fields) {
  if (QProcess::execute(QStringLiteral("/usr/bin/python3"),
                        {QStringLiteral("-c"), QStringLiteral("import torch.distributed.run")}) !=
      0)
    return {};
  const QString parse = QStringLiteral(
                            "import json, sys\n"
                            "from torch.distributed.run import get_args_parser\n"
                            "a = get_args_parser().parse_args(sys.argv[1:])\n"
                            "print(json.dumps(") +
                        fields + QStringLiteral("))\n");
  QProcess sh;
  sh.setProcessChannelMode(QProcess::ForwardedErrorChannel);
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("PARSE"), parse);
  sh.setProcessEnvironment(env);
  sh.start(QStringLiteral("/bin/sh"),
           {QStringLiteral("-c"),
            QStringLiteral("torchrun() { exec /usr/bin/python3 -c \"$PARSE\" \"$@\"; }\n"
                           "NODE_RANK=1 MASTER_ADDR=node0\n") +
                line});
  if (!sh.waitForFinished(120000) || sh.exitCode() != 0) return QStringLiteral("(failed)");
  return QString::fromUtf8(sh.readAllStandardOutput()).trimmed();
}
}  // namespace

class TestLaunchCommand : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void torchrunForDefaults() {
    RunSpec s;
    s.nproc = 4;
    QCOMPARE(torchrunCommand(s),
             QStringLiteral("torchrun --redirects 2 --tee 2 --no_python --nnodes 1 "
                            "--nproc_per_node 4 ddpdesk-worker "
                            "--task seed --device cpu --batch-size 4 --accum-steps 1 --epochs 1 "
                            "--lr 0.001 --seed 0"));
  }

  void nonDefaultFieldsAreAddedInFieldOrder() {
    RunSpec s;
    s.task = "fmnist-mlp";
    s.nproc = 2;
    s.batch_size = 64;
    s.accum_steps = 4;
    s.epochs = 3;
    s.lr = 0.0005;
    s.weight_decay = 0.01;
    s.dataset_size = 12000;
    s.log_interval = 10;
    s.name = "my run";
    s.on_end = "mail -s done me";  // the monitor's to run, never the ranks'
    s.max_restarts = 2;            // the monitor restarts; a worker under torchrun cannot
    s.restart_backoff = 5;
    const QString cmd = torchrunCommand(s, QStringLiteral("/opt/ddpdesk/bin/ddpdesk-worker"));
    QCOMPARE(cmd, QStringLiteral(
                      "torchrun --redirects 2 --tee 2 --no_python --nnodes 1 --nproc_per_node 2 "
                      "/opt/ddpdesk/bin/ddpdesk-worker --task fmnist-mlp --device cpu "
                      "--batch-size 64 --accum-steps 4 --epochs 3 --lr 0.0005 "
                      "--weight-decay 0.01 --seed 0 --dataset-size 12000 --log-interval 10 "
                      "--name 'my run'"));
    QVERIFY(!cmd.contains(QLatin1String("--nproc ")));  // the launcher sets the world
  }

  void srunOnCpuAndCuda() {
    RunSpec s;
    s.nproc = 2;
    QVERIFY(
        srunCommand(s).startsWith(QLatin1String("srun --nodes 1 --ntasks 2 ddpdesk-worker "
                                                "--task seed")));
    s.device = "cuda";
    s.nproc = 8;
    QVERIFY(srunCommand(s).contains(
        QLatin1String("srun --nodes 1 --ntasks 8 --gres=gpu:8 ddpdesk-worker --task seed "
                      "--device cuda")));
  }

  void aSlurmSpecGivesItsNodesAndRanksPerNode() {
    RunSpec s;
    s.task = "fmnist-cnn";
    s.device = "cuda";
    s.launcher = "slurm";
    s.slurm_nodes = 2;
    s.slurm_tasks_per_node = 4;
    s.nproc = 1;  // the local field: not what a Slurm spec runs
    QVERIFY(torchrunCommand(s).startsWith(
        QLatin1String("torchrun --redirects 2 --tee 2 --no_python --nnodes 2 --node_rank "
                      "\"$NODE_RANK\" --master_addr "
                      "\"$MASTER_ADDR\" --nproc_per_node 4 ddpdesk-worker --task fmnist-cnn "
                      "--device cuda")));
    QVERIFY(srunCommand(s).startsWith(
        QLatin1String("srun --nodes 2 --ntasks 8 --ntasks-per-node 4 --gres=gpu:4 "
                      "ddpdesk-worker --task fmnist-cnn --device cuda")));
    QVERIFY(!workerArguments(s).contains(QLatin1String("--launcher")));
  }

  void theTorchrunLineParsesWithDebiansTorchrun() {
    // The line as a user pastes it into a shell, with `torchrun` standing for Debian's
    // torch.distributed.run (what test_torchrun drives): its own argument parser must take
    // every flag, hand the worker its words unchanged, and read the node shape from the spec.
    RunSpec s;
    s.task = "fmnist-mlp";
    s.launcher = "slurm";
    s.slurm_nodes = 3;
    s.slurm_tasks_per_node = 2;
    s.name = "it's mine";
    const QString got = parsedByTorchrun(
        torchrunCommand(s), QStringLiteral("[a.nnodes, a.node_rank, a.master_addr, "
                                           "a.nproc_per_node, a.no_python, a.training_script] + "
                                           "a.training_script_args"));
    if (got.isEmpty()) QSKIP("needs Debian's python3-torch");
    nlohmann::json want = {"3", 1, "node0", "2", true, "ddpdesk-worker"};
    for (const QString& a : workerArguments(s)) want.push_back(a.toStdString());
    QCOMPARE(
        QString::fromStdString(nlohmann::json::parse(got.toStdString(), nullptr, false).dump()),
        QString::fromStdString(want.dump()));
  }

  // Task python: the script under torchrun, its placeholders filled; srun runs one torchrun per
  // node. The torchrun line goes through Debian's torchrun parser as a user's paste would.
  void pythonScriptLines() {
    RunSpec s;
    s.task = "python";
    s.script = "train dir/train.py";
    s.nproc = 4;
    s.batch_size = 32;
    s.script_args = "--bs {batch_size} --out {run_dir}/ckpt --name 'two words'";
    QCOMPARE(torchrunCommand(s), QStringLiteral("torchrun --redirects 2 --tee 2 --nnodes 1 "
                                                "--nproc_per_node 4 'train dir/train.py' --bs 32 "
                                                "--out ./ckpt --name 'two words'"));
    s.launcher = "slurm";
    s.slurm_nodes = 2;
    s.slurm_tasks_per_node = 8;
    s.device = "cuda";
    QCOMPARE(srunCommand(s),
             QStringLiteral("srun --nodes 2 --ntasks 2 --ntasks-per-node 1 --gres=gpu:8 torchrun "
                            "--redirects 2 --tee 2 --nnodes 2 --nproc_per_node 8 --rdzv_backend "
                            "c10d --rdzv_endpoint "
                            "\"$MASTER_ADDR:29500\" 'train dir/train.py' --bs 32 --out ./ckpt "
                            "--name 'two words'"));
    s.launcher = "local";
    const QString got = parsedByTorchrun(
        torchrunCommand(s), QStringLiteral("[a.nnodes, a.nproc_per_node, a.no_python, "
                                           "a.training_script] + a.training_script_args"));
    if (got.isEmpty()) QSKIP("needs Debian's python3-torch");
    QCOMPARE(got, QStringLiteral("[\"1\", \"4\", false, \"train dir/train.py\", \"--bs\", "
                                 "\"32\", \"--out\", \"./ckpt\", \"--name\", \"two words\"]"));
  }

  void quoting() {
    QCOMPARE(shellQuote(QStringLiteral("plain-word_1.2/x")), QStringLiteral("plain-word_1.2/x"));
    QCOMPARE(shellQuote(QStringLiteral("a b")), QStringLiteral("'a b'"));
    QCOMPARE(shellQuote(QStringLiteral("it's")), QStringLiteral("'it'\\''s'"));
    QCOMPARE(shellQuote(QStringLiteral("$HOME")), QStringLiteral("'$HOME'"));
    QCOMPARE(shellQuote(QString()), QStringLiteral("''"));
    RunSpec s;
    s.metrics_file = "/tmp/m-{rank}.jsonl";
    QVERIFY(torchrunCommand(s).contains(QLatin1String("--metrics-file '/tmp/m-{rank}.jsonl'")));
    // The words themselves are unquoted: they also go to QProcess as they are.
    QVERIFY(workerArguments(s).contains(QLatin1String("/tmp/m-{rank}.jsonl")));
  }

  void userTaskFieldsOnlyForAUserTask() {
    RunSpec s;
    s.task = "script";
    s.model = "/data/model.pt";
    s.train_data = "/data/train.safetensors";
    s.loss = "mse";
    QVERIFY(torchrunCommand(s).endsWith(
        QLatin1String("--model /data/model.pt --train-data /data/train.safetensors --loss mse")));
    s.task = "fmnist-mlp";  // the form keeps the files while another task is chosen
    QVERIFY(!workerArguments(s).contains(QLatin1String("--model")));
    QVERIFY(!workerArguments(s).contains(QLatin1String("--loss")));
  }

  void everyArgumentIsAFlagTheWorkerKnows() {
    // Round trip: the flags parse back, through the shared rules, into the same spec.
    RunSpec s;
    s.task = "fmnist-cnn";
    s.batch_size = 32;
    s.collective_timeout = 12.5;
    s.checkpoint_every = 100;
    const QStringList args = workerArguments(s);
    QCOMPARE(args.size() % 2, 0);
    nlohmann::json j = nlohmann::json::object();
    for (int i = 0; i < args.size(); i += 2) {
      QVERIFY(args[i].startsWith(QLatin1String("--")));
      std::string key = args[i].mid(2).toStdString();
      for (char& c : key)
        if (c == '-') c = '_';
      j[key] = args[i + 1].toStdString();
    }
    RunSpec back;
    QVERIFY(apply_fields(j, back).empty());
    back.nproc = s.nproc;
    QCOMPARE(QString::fromStdString(to_json_text(back)), QString::fromStdString(to_json_text(s)));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestLaunchCommand)
#include "test_launch_command.moc"
