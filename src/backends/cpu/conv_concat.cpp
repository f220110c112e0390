#include "backends/cpu/conv_concat.h"

#include <omp.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "backends/cpu/kernels.h"
#include "backends/cpu/nhwc_pool.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/onednn_conv.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/part_schedule.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/team_costs.h"
#include "backends/cpu/winograd_conv.h"
#include "kernels/thread_scratch.h"

namespace kiln::backends::cpu {

namespace {

bool is_pool(const ir::Node& n) {
  return n.domain() == "kiln" && (n.op_type() == "NhwcMaxPool" || n.op_type() == "NhwcAveragePool");
}

bool static_float4(const ir::Value* v) { return dnnl_util::static_float(v) && v->type.rank() == 4; }

double elements(const ir::Value* v) {
  double n = 1;
  for (int64_t d : v->type.static_dims()) n *= static_cast<double>(d);
  return n;
}

// A conv's cost in winograd_pays' terms (winograd_conv.h): a direct conv's products plus its
// weight stream; kiln's Winograd's products over its tiles (channels in 16-lane vectors), its
// transformed weights' stream, and its transforms: each of a tile's (n+2)^2 values per input and
// output channel costs about 0.55 (n+2)^2 (fitted on Inception's 3x3 convs at 17x17 and 35x35,
// tiles 2 and 4: bench/results/experiments-20261207-session48.md).
double conv_cost(const ir::Node& conv) {
  constexpr double kTransformCost = 0.55;
  const auto yd = conv.output(0)->type.static_dims();
  const auto wd = conv.input(1)->type.static_dims();
  const double oc = static_cast<double>(yd[3]), c = static_cast<double>(wd[1]);
  if (kernel_enabled("kiln_winograd") && kiln_winograd_accepts(conv)) {
    const auto p = winograd_params(conv, 1);
    if (auto t = p.find("tile"); t != p.end()) {
      const int64_t n = std::get<int64_t>(t->second);
      const double positions = static_cast<double>((n + 2) * (n + 2));
      const double tiles = static_cast<double>(yd[0] * ((yd[1] + n - 1) / n) * ((yd[2] + n - 1) / n));
      const double lanes = static_cast<double>((wd[1] + 15) / 16 * 16);
      return tiles * positions * lanes * oc + kWinogradWeightByteCost * positions * c * oc * sizeof(float) +
             kTransformCost * positions * tiles * positions * (c + oc);
    }
  }
  const double products = static_cast<double>(yd[0] * yd[1] * yd[2]) * oc * c * static_cast<double>(wd[2] * wd[3]);
  return products + kDirectWeightByteCost * elements(conv.input(1)) * sizeof(float);
}

// What a step loses when split across a team, measured per instruction on Inception's convs
// (2-thread time less half the 1-thread time): about 10 us a oneDNN conv (its OpenMP region,
// memory objects and its split of a small image: 800k multiply-adds), 3 us a kiln kernel (the
// held team's hand-off and the rows the threads share: 250k).
double split_handoff_cost(const ir::Node& step) {
  constexpr double kOnednnSplitLoss = 8e5, kKilnSplitLoss = 2.5e5;
  if (is_pool(step)) return kKilnSplitLoss;
  const auto wd = step.input(1)->type.static_dims();
  const bool kiln_kernel = (wd[2] == 1 && wd[3] == 1) || (kernel_enabled("kiln_winograd") && kiln_winograd_accepts(step));
  return kiln_kernel ? kKilnSplitLoss : kOnednnSplitLoss;
}

// A pool reads its window for every output: about two multiply-adds' time a tap.
double pool_cost(const ir::Node& pool) {
  const std::optional<PoolWindow> g = nhwc_pool_window(pool);
  if (!g) return 0;
  const double outputs = elements(pool.output(0));
  return 2 * outputs * static_cast<double>(g->kh * g->kw);
}

// A branch of the body: its steps in order, the last the conv writing its slice, and the body
// input the first reads.
struct Branch {
  std::vector<const ir::Node*> steps;
  int input = 0;
};

// The body's branches in the order of the Concat's inputs; empty where the node is not a
// ConvConcat this kernel runs (it declines).
std::vector<Branch> conv_concat_branches(const ir::Node& node) {
  auto it = node.attrs.find("body");
  if (it == node.attrs.end() || !it->second.g || node.num_outputs() != 1) return {};
  const ir::Graph& body = *it->second.g;
  const std::vector<ir::Node*> nodes = body.nodes();
  if (nodes.size() < 3 || body.outputs().size() != 1) return {};
  const ir::Node* concat = nodes.back();
  if (concat->op_type() != "Concat" || concat->output(0) != body.outputs()[0]) return {};
  if (!static_float4(concat->output(0))) return {};
  std::unordered_map<const ir::Value*, int> input_index;
  for (size_t i = 0; i < body.inputs().size(); ++i) input_index[body.inputs()[i]] = static_cast<int>(i);
  std::vector<Branch> branches;
  for (const ir::Value* piece : concat->inputs()) {
    const ir::Node* conv = piece ? piece->producer() : nullptr;
    if (!conv || conv->domain() != "kiln" || conv->op_type() != "FusedConv" || !conv->input(0)) return {};
    if (!static_float4(piece) || !static_float4(conv->input(1))) return {};
    Branch b;
    b.steps.push_back(conv);
    while (!input_index.count(b.steps.front()->input(0))) {
      const ir::Node* step = b.steps.front()->input(0)->producer();
      if (!step || step->num_outputs() != 1 || !conv_concat_step(*step)) return {};
      b.steps.insert(b.steps.begin(), step);
    }
    b.input = input_index.at(b.steps.front()->input(0));
    branches.push_back(std::move(b));
  }
  return branches;
}

std::vector<double> branch_costs(const std::vector<Branch>& branches, int threads) {
  std::vector<double> costs;
  for (const Branch& b : branches) costs.push_back(conv_concat_branch_cost(b.steps, threads));
  return costs;
}

// A conv of a branch on `threads`: kiln's Winograd or 1x1 kernel where they take it, else
// oneDNN's (its Winograd first); `out_channels_total` > 0 writes a channel slice of a tensor
// that wide (kiln's kernels directly, oneDNN's through a reorder of its dense result).
std::unique_ptr<Kernel> make_branch_conv(const ir::Node& conv, int threads, int64_t out_channels_total) {
  std::unique_ptr<Kernel> k;
  if (kernel_enabled("kiln_winograd")) k = make_kiln_winograd(conv, threads, out_channels_total);
  if (!k && kernel_enabled("kiln_pointwise")) k = make_kiln_pointwise(conv, threads, out_channels_total);
  if (!k && kernel_enabled("onednn_winograd")) k = make_onednn_conv(conv, true, threads, out_channels_total);
  if (!k) k = make_onednn_conv(conv, false, threads, out_channels_total);
  return k;
}

// Each branch's steps pass their results along in the running thread's scratch slots 1 and 2
// (slot 0 is a oneDNN conv's own), the last step writing its channel slice of the output.
class ConvConcatKernel : public Kernel {
 public:
  struct Step {
    std::unique_ptr<Kernel> kernel;
    std::vector<int64_t> dims;  // its dense NHWC output's
  };
  struct Part {
    std::vector<Step> steps;     // before the conv, in order
    std::unique_ptr<Kernel> conv;  // writes the slice
    int input = 0;               // which of the node's inputs the branch reads
    int64_t channel_offset = 0;
    std::vector<int64_t> dims;   // the slice's NHWC dims
  };
  ConvConcatKernel(std::vector<Part> parts, std::vector<std::vector<int>> by_thread)
      : parts_(std::move(parts)), by_thread_(std::move(by_thread)) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    float* y = static_cast<float*>(outputs[0]->raw());
    auto run_part = [&](const Part& p) {
      const Tensor* x = inputs[p.input];
      Tensor links[2];
      for (size_t i = 0; i < p.steps.size(); ++i) {
        const Step& s = p.steps[i];
        Tensor& link = links[i % 2];
        const size_t bytes = static_cast<size_t>(s.dims[0] * s.dims[1] * s.dims[2] * s.dims[3]) * sizeof(float);
        void* buf = kiln_kernels::thread_scratch(bytes, 1 + static_cast<int>(i % 2));
        if (!buf) throw Error("ConvConcat: no memory for a branch's intermediate result");
        link = Tensor::wrap(DType::Float, s.dims, buf);
        s.kernel->run({x}, {&link});
        x = &link;
      }
      // The slice's first element; the conv's destination descriptor carries the row stride.
      Tensor slice = Tensor::wrap(DType::Float, p.dims, y + p.channel_offset);
      p.conv->run({x}, {&slice});
    };
    if (by_thread_.empty()) {
      for (const Part& p : parts_) run_part(p);
      return;
    }
    const int64_t team = static_cast<int64_t>(by_thread_.size());
    parallel_for(team, static_cast<int>(team), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        for (int part : by_thread_[static_cast<size_t>(t)]) run_part(parts_[static_cast<size_t>(part)]);
    });
  }

  void wait_ready() const override {
    for (const Part& p : parts_) {
      for (const Step& s : p.steps) s.kernel->wait_ready();
      p.conv->wait_ready();
    }
  }
  bool runs_in_team() const override {
    return std::all_of(parts_.begin(), parts_.end(), [](const Part& p) {
      return p.conv->runs_in_team() &&
             std::all_of(p.steps.begin(), p.steps.end(), [](const Step& s) { return s.kernel->runs_in_team(); });
    });
  }

 private:
  std::vector<Part> parts_;
  std::vector<std::vector<int>> by_thread_;  // the parts each thread runs whole; empty: "split"
};

// Sets the OpenMP team size oneDNN's primitives are made for while it lives.
class OmpThreadsScope {
 public:
  explicit OmpThreadsScope(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OmpThreadsScope() { omp_set_num_threads(saved_); }
  OmpThreadsScope(const OmpThreadsScope&) = delete;
  OmpThreadsScope& operator=(const OmpThreadsScope&) = delete;

 private:
  int saved_;
};

// `schedule`: "split" or "parts" (see ConvConcatKernel); empty: the rule's.
std::unique_ptr<Kernel> make_conv_concat(const ir::Node& node, int threads, std::string schedule) {
  const std::vector<Branch> branches = conv_concat_branches(node);
  if (branches.empty()) return nullptr;
  const int64_t total = node.attrs.at("body").g->outputs()[0]->type.static_dims()[3];
  const std::vector<double> costs = branch_costs(branches, threads);
  if (schedule.empty()) schedule = part_schedule_rule(costs, threads);
  if (schedule != "split" && schedule != "parts") return nullptr;
  const bool dealt = schedule == "parts" && threads > 1;
  const int part_threads = dealt ? 1 : threads;
  std::optional<OmpThreadsScope> one_thread;
  if (dealt) one_thread.emplace(1);
  std::vector<ConvConcatKernel::Part> parts;
  int64_t offset = 0;
  for (const Branch& b : branches) {
    ConvConcatKernel::Part p;
    for (size_t i = 0; i + 1 < b.steps.size(); ++i) {
      const ir::Node& n = *b.steps[i];
      ConvConcatKernel::Step s;
      s.kernel = is_pool(n) ? make_nhwc_pool(n, part_threads) : make_branch_conv(n, part_threads, 0);
      if (!s.kernel) return nullptr;
      s.dims = n.output(0)->type.static_dims();
      p.steps.push_back(std::move(s));
    }
    const ir::Node& conv = *b.steps.back();
    p.conv = make_branch_conv(conv, part_threads, total);
    if (!p.conv) return nullptr;
    p.input = b.input;
    p.channel_offset = offset;
    p.dims = conv.output(0)->type.static_dims();
    offset += p.dims[3];
    parts.push_back(std::move(p));
  }
  if (offset != total) return nullptr;
  return std::make_unique<ConvConcatKernel>(std::move(parts), dealt ? deal_parts(costs, threads)
                                                                    : std::vector<std::vector<int>>{});
}

}  // namespace

bool conv_concat_step(const ir::Node& node) {
  if (node.num_outputs() != 1 || node.num_inputs() < 1 || !static_float4(node.input(0)) || !static_float4(node.output(0)))
    return false;
  if (node.input(0)->is_constant()) return false;
  if (is_pool(node)) return nhwc_pool_window(node).has_value();
  if (node.domain() != "kiln" || node.op_type() != "FusedConv" || !node.attr_int("channels_last", 0)) return false;
  if (node.attr_int("group", 1) != 1 || node.attr_int("x_blocked", 0) || node.attr_int("y_blocked", 0) ||
      node.attr_int("z_blocked", 0))
    return false;
  if (node.num_inputs() < 2 || !static_float4(node.input(1)) || !node.input(1)->is_constant()) return false;
  if (node.num_inputs() > 2 && node.input(2) && !node.input(2)->is_constant()) return false;
  for (int i = 3; i < node.num_inputs(); ++i)  // a residual Z or channel scale S
    if (node.input(i)) return false;
  return true;
}

double conv_concat_branch_cost(const std::vector<const ir::Node*>& steps, int threads) {
  // A team wrote the branch's input, so the thread that runs the branch whole finds all but its
  // own share of it in the other cores' caches.
  double cost = 0;
  for (const ir::Node* n : steps) cost += is_pool(*n) ? pool_cost(*n) : conv_cost(*n);
  if (threads > 1 && !steps.empty())
    cost += kRemoteByteCost * (1 - 1.0 / threads) * elements(steps.front()->input(0)) * sizeof(float);
  return cost;
}

double conv_concat_branch_bytes(const std::vector<const ir::Node*>& steps) {
  if (steps.empty()) return 0;
  double bytes = elements(steps.front()->input(0));
  for (size_t i = 0; i + 1 < steps.size(); ++i) bytes += elements(steps[i]->output(0));
  return bytes * sizeof(float);
}

bool conv_concat_deals(const std::vector<std::vector<const ir::Node*>>& branches, int threads, int64_t l2_bytes) {
  if (threads < 2 || branches.size() < 2) return false;
  std::vector<double> costs;
  double total = 0, handoffs = 0;
  for (const auto& steps : branches) {
    if (steps.empty()) return false;
    for (size_t i = 0; i + 1 < steps.size(); ++i)
      if (!conv_concat_step(*steps[i])) return false;
    if (conv_concat_branch_bytes(steps) > static_cast<double>(l2_bytes)) return false;
    costs.push_back(conv_concat_branch_cost(steps, threads));
    total += costs.back();
    for (const ir::Node* n : steps) handoffs += split_handoff_cost(*n);
  }
  // Dealt, the busiest thread's branches; split, an even share of all and every step's hand-off.
  const std::vector<std::vector<int>> by_thread = deal_parts(costs, threads);
  const double dealt = dealt_imbalance(costs, by_thread) * total / threads;
  return dealt <= total / threads + handoffs && part_schedule_rule(costs, threads) == "parts";
}

void add_conv_concat_kernels(std::vector<KernelFactory>& table) {
  table.push_back({.domain = "kiln",
                   .op = "ConvConcat",
                   .make = nullptr,
                   .name = "onednn",
                   .choose =
                       [](const ir::Node& n, int threads) -> std::map<std::string, plan::ParamValue> {
                     const std::vector<Branch> branches = conv_concat_branches(n);
                     if (branches.empty()) return {};
                     return {{"schedule", part_schedule_rule(branch_costs(branches, threads), threads)}};
                   },
                   .make_spec = [](const ir::Node& n, const plan::KernelSpec& s) -> std::unique_ptr<Kernel> {
                     // Plans written before the schedule was a parameter split every conv.
                     return make_conv_concat(n, s.threads, s.params.count("schedule") ? s.get_string("schedule") : "split");
                   },
                   .choices = [](const ir::Node&, int threads) -> plan::ParamChoices {
                     if (threads < 2) return {{"schedule", {std::string("split")}}};
                     return {{"schedule", {std::string("split"), std::string("parts")}}};
                   },
                   .thread_params = {"schedule"}});
}

}  // namespace kiln::backends::cpu
