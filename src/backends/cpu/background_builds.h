// One background thread, shared by every session in the process, that builds the slower
// kernels a session upgrades to after creation (oneDNN's Winograd weight transforms). One
// thread, not one per kernel: with a thread each, a model's builders (resnet18 has sixteen)
// take the CPU from the thread creating the session, whose kernel selection then takes much
// longer on a 2-core machine.
#pragma once
#include <functional>
#include <future>

namespace kiln::backends::cpu {

// Queues `build` (run in submission order, on one OpenMP thread) and returns its future, which
// a kernel waits on before it is destroyed. An exception from `build` is stored in the future.
std::future<void> run_in_background(std::function<void()> build);

}  // namespace kiln::backends::cpu
