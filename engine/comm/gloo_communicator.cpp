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
  GlooStoreAdapter(c10::intrusive_ptr<c10d::Store> s, double timeout_s,
                   const std::atomic<bool>* stop)
      : store_(std::move(s)), timeout_s_(timeout_s), stop_(stop) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    auto v = store_->get(key);
    return std::vector<char>(v.begin(), v.end());
  }
  // Waiting for the peers' addresses is where a rank waits for late peers: it watches the stop
  // flag (store.h).
  void wait(const std::vector<std::string>& keys) override {
    wait_for_keys(*store_, keys, timeout_s_, stop_);
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    wait_for_keys(*store_, keys, std::chrono::duration<double>(t).count(), stop_);
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  double timeout_s_;
  const std::atomic<bool>* stop_;
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
  explicit GlooCommunicator(const CommOptions& o) : env_(o.env) {
    auto c10_store = store_for(o);
    GlooStoreAdapter adapter(c10_store, o.timeout_s, o.stop);
    gloo::transport::tcp::attr attr;
    if (!o.gloo_socket_ifname.empty()) {
      attr.iface = o.gloo_socket_ifname;
    } else if (o.env.master_addr == "127.0.0.1" || o.env.master_addr == "localhost") {
      attr.hostname = "127.0.0.1";  // everyone is on this machine: stay on loopback
    } else {
      char host[256] = {0};
      gethostname(host, sizeof host - 1);
      attr.hostname = host;
    }
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_s * 1000));
    // Two meshes with different pair modes (DESIGN.md's latency table): small messages take
    // busy-polling pairs (~0.03 ms for a seed-task allreduce, and the wait is too short to waste
    // a core), large ones take blocking sync pairs, where the calling thread reads the socket
    // itself instead of handing off to Gloo's event loop. DDPDESK_GLOO_MODE=async|sync|busy
    // forces one mode for both (for measurements).
    const std::string& mode = o.gloo_mode;
    small_ = connect_mesh(adapter, device, "small", timeout, mode == "auto" ? "busy" : mode);
    large_ = connect_mesh(adapter, device, "large", timeout, mode == "auto" ? "sync" : mode);
  }

  int rank() const override { return env_.rank; }
  int world() const override { return env_.world; }
  std::string backend() const override { return "gloo"; }

  std::unique_ptr<PreparedAllreduce> prepare_allreduce(torch::Tensor buffer) override {
    check_cpu_contiguous(buffer);
    return std::make_unique<GlooAllreduce>(ctx_for(buffer.nbytes()), exec_, buffer, collectives_);
  }

  void allreduce_sum(torch::Tensor t) override {
    check_cpu_contiguous(t);
    ++collectives_;
    run_sync([&] {
      if (t.scalar_type() == torch::kDouble) {
        gloo::AllreduceRing<double>(small_, {t.data_ptr<double>()}, t.numel()).run();
      } else if (t.scalar_type() == torch::kFloat) {
        gloo::AllreduceRing<float>(small_, {t.data_ptr<float>()}, t.numel()).run();
      } else {
        throw std::logic_error("allreduce_sum: float32 or float64 only");
      }
    });
  }

  void broadcast(torch::Tensor t, int root) override {
    check_cpu_contiguous(t);
    ++collectives_;
    run_sync([&] {
      gloo::BroadcastOneToAll<char>(large_, {static_cast<char*>(t.data_ptr())},
                                    t.numel() * t.element_size(), root)
          .run();
    });
  }

  void barrier() override {
    ++collectives_;
    run_sync([&] { gloo::BarrierAllToOne(small_).run(); });
  }

 private:
  // One-off collectives also go through the executor so they stay ordered after any bucket.
  template <typename F>
  void run_sync(F&& f) {
    exec_.wait(exec_.submit(std::function<void()>(f)));
  }

  std::shared_ptr<gloo::Context> connect_mesh(gloo::rendezvous::Store& store,
                                              std::shared_ptr<gloo::transport::Device> device,
                                              const std::string& name,
                                              std::chrono::milliseconds timeout,
                                              const std::string& mode) {
    gloo::rendezvous::PrefixStore prefixed(name, store);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(env_.rank, env_.world);
    ctx->setTimeout(timeout);
    try {
      ctx->connectFullMesh(prefixed, device);
    } catch (const StopRequested&) {
      throw;
    } catch (const std::exception& e) {
      std::string what = e.what();
      throw std::runtime_error("gloo could not connect all " + std::to_string(env_.world) +
                               " ranks: " + what.substr(0, what.find('\n')));
    }
    if (mode == "sync" || mode == "busy")
      for (int i = 0; i < env_.world; ++i)
        if (i != env_.rank) ctx->getPair(i)->setSync(true, mode == "busy");
    return ctx;
  }
  const std::shared_ptr<gloo::Context>& ctx_for(std::int64_t bytes) const {
    return bytes <= kSmallBytes ? small_ : large_;
  }

  static constexpr std::int64_t kSmallBytes = 64 << 10;
  RankEnv env_;
  std::shared_ptr<gloo::Context> small_, large_;
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
