// Gloo directly (not through c10d's ProcessGroupGloo): its ring allreduce prepared once per
// gradient bucket is about 10x faster than ProcessGroupGloo on small messages (DESIGN.md).
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "communicator.h"
#include "serial_executor.h"
#include "store.h"

namespace ddpdesk {
namespace {

// Lets Gloo's rendezvous use the c10d store (TCPStore) that torchrun and Slurm runs share.
class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  explicit GlooStoreAdapter(c10::intrusive_ptr<c10d::Store> s) : store_(std::move(s)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    auto v = store_->get(key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    store_->wait(keys, t);
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

void check_cpu_contiguous(const torch::Tensor& t) {
  if (!t.device().is_cpu() || !t.is_contiguous())
    throw std::logic_error("gloo collectives need contiguous CPU tensors");
}

class GlooAllreduce : public PreparedAllreduce {
 public:
  GlooAllreduce(std::shared_ptr<gloo::Context> ctx, SerialExecutor& exec, torch::Tensor buf,
                std::int64_t& counter)
      : exec_(exec),
        buffer_(std::move(buf)),
        algo_(std::make_shared<gloo::AllreduceRing<float>>(
            ctx, std::vector<float*>{buffer_.data_ptr<float>()}, buffer_.numel())),
        counter_(counter) {}
  void start() override {
    ++counter_;
    auto algo = algo_;
    ticket_ = exec_.submit([algo] { algo->run(); });
  }
  void wait() override { exec_.wait(ticket_); }
  void run_now() override {
    ++counter_;
    algo_->run();
  }

 private:
  SerialExecutor& exec_;
  torch::Tensor buffer_;
  std::shared_ptr<gloo::AllreduceRing<float>> algo_;
  std::int64_t& counter_;
  std::uint64_t ticket_ = 0;
};

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(const CommOptions& o) : env_(o.env) {
    auto c10_store = connect_store(o.env, o.timeout_s);
    GlooStoreAdapter adapter(c10_store);
    gloo::transport::tcp::attr attr;
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
      attr.iface = ifname;
    } else if (o.env.master_addr == "127.0.0.1" || o.env.master_addr == "localhost") {
      attr.hostname = "127.0.0.1";  // everyone is on this machine: stay on loopback
    } else {
      char host[256] = {0};
      gethostname(host, sizeof host - 1);
      attr.hostname = host;
    }
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(o.env.rank, o.env.world);
    auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_s * 1000));
    ctx->setTimeout(timeout);
    try {
      ctx->connectFullMesh(adapter, device);
    } catch (const std::exception& e) {
      std::string what = e.what();
      throw std::runtime_error("gloo could not connect all " + std::to_string(o.env.world) +
                               " ranks: " + what.substr(0, what.find('\n')));
    }
    // Busy-polling pairs cut small-message latency but burn a core; opt-in (see README).
    if (const char* bp = std::getenv("DDPDESK_GLOO_BUSY_POLL"); bp && std::string(bp) == "1") {
      for (int i = 0; i < o.env.world; ++i)
        if (i != o.env.rank) ctx->getPair(i)->setSync(true, true);
    }
    ctx_ = ctx;
  }

  int rank() const override { return env_.rank; }
  int world() const override { return env_.world; }
  std::string backend() const override { return "gloo"; }

  std::unique_ptr<PreparedAllreduce> prepare_allreduce(torch::Tensor buffer) override {
    check_cpu_contiguous(buffer);
    return std::make_unique<GlooAllreduce>(ctx_, exec_, buffer, collectives_);
  }

  void allreduce_sum(torch::Tensor t) override {
    check_cpu_contiguous(t);
    ++collectives_;
    run_sync([&] {
      if (t.scalar_type() == torch::kDouble) {
        gloo::AllreduceRing<double>(ctx_, {t.data_ptr<double>()}, t.numel()).run();
      } else if (t.scalar_type() == torch::kFloat) {
        gloo::AllreduceRing<float>(ctx_, {t.data_ptr<float>()}, t.numel()).run();
      } else {
        throw std::logic_error("allreduce_sum: float32 or float64 only");
      }
    });
  }

  void broadcast(torch::Tensor t, int root) override {
    check_cpu_contiguous(t);
    ++collectives_;
    run_sync([&] {
      gloo::BroadcastOneToAll<char>(ctx_, {static_cast<char*>(t.data_ptr())},
                                    t.numel() * t.element_size(), root)
          .run();
    });
  }

  void barrier() override {
    ++collectives_;
    run_sync([&] { gloo::BarrierAllToOne(ctx_).run(); });
  }

 private:
  // One-off collectives also go through the executor so they stay ordered after any bucket.
  template <typename F>
  void run_sync(F&& f) {
    exec_.wait(exec_.submit(std::function<void()>(f)));
  }

  RankEnv env_;
  std::shared_ptr<gloo::Context> ctx_;
  SerialExecutor exec_;
};

}  // namespace

bool gloo_available() {
  return true;
}

std::unique_ptr<Communicator> make_gloo_communicator(const CommOptions& o) {
  return std::make_unique<GlooCommunicator>(o);
}

}  // namespace ddpdesk
