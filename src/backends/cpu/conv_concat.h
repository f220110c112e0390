// kiln.ConvConcat on the CPU (src/lower/fuse_conv_concat.h). The body is a set of branches, each
// a chain of steps from one of the node's inputs to the conv that writes the branch's channel
// slice of the output (squeezenet's expand convs: one step each; an Inception block: its 1x1,
// 1x7, 7x1 ... convs and its pool branch). With a team, the branches run one after another, each
// step split across the team ("split"), or are dealt out whole to the threads by their cost
// ("parts", part_schedule.h): each thread then runs its branches at one-thread speed, their
// intermediate results in its own scratch (kernels/thread_scratch.h) and caches, and the
// threads meet once at the end.
#pragma once
#include <vector>

#include "backends/cpu/cache_size.h"
#include "ir/graph.h"

namespace kiln::backends::cpu {

// Whether `node` may be a step of a branch before the conv that writes its slice: a static
// float channels-last FusedConv of one group with constant weights and bias and no residual or
// channel scale, or a kiln.NhwcMaxPool / NhwcAveragePool.
bool conv_concat_step(const ir::Node& node);

// A branch's cost for dealing to one of `threads` threads, in multiply-adds: its convs' products
// and weight streams as winograd_pays weighs them (kiln's Winograd where it takes the conv, else
// a direct conv), its pools' window reads, and at 2+ threads its input's bytes that the other
// threads wrote.
double conv_concat_branch_cost(const std::vector<const ir::Node*>& steps, int threads);

// Whether branches of these steps (each in order, its last the conv writing the slice) are dealt
// to `threads` threads: every step one the kernel runs, and the busiest thread's branches cost
// no more than an even share of all plus what splitting each step across the team loses (a
// oneDNN call's OpenMP region, a held team's hand-off), and every branch's input and intermediate
// results fit the core's L2 (`l2_bytes`; conv_concat_branch_bytes): a thread runs a branch whole
// from its own caches, where split, each thread works on half of every step's rows. On large
// images the steps split well and each branch reading the whole block input from the other core
// costs more than that.
bool conv_concat_deals(const std::vector<std::vector<const ir::Node*>>& branches, int threads,
                       int64_t l2_bytes = l2_cache_bytes());
// The bytes a branch run whole by one thread works through: its input and every step's result
// but the last (which goes to the Concat's slice).
double conv_concat_branch_bytes(const std::vector<const ir::Node*>& steps);

}  // namespace kiln::backends::cpu
