#include "backends/cpu/background_builds.h"

#include <omp.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace kiln::backends::cpu {

namespace {

class BuildQueue {
 public:
  ~BuildQueue() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    ready_.notify_one();
    if (worker_.joinable()) worker_.join();
  }

  std::future<void> submit(std::function<void()> build) {
    std::packaged_task<void()> task(std::move(build));
    std::future<void> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Started on first use: a process that never builds in the background holds no thread.
      if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
    return done;
  }

 private:
  void work() {
    omp_set_num_threads(1);
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
        // At exit, queued builds are dropped: their futures report a broken promise, and the
        // kernels that own them are gone already unless a session outlived main().
        if (stop_) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> tasks_;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace

std::future<void> run_in_background(std::function<void()> build) {
  static BuildQueue queue;
  return queue.submit(std::move(build));
}

}  // namespace kiln::backends::cpu
