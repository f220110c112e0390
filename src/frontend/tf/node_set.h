// The nodes of a GraphDef, or of a library function's body, with their inputs resolved to
// (producer, output index), a topological order and, for TensorFlow 1 while loops, the frame
// each node runs in.
//
// A TensorFlow 1 loop is a cycle: Enter -> Merge -> ... -> NextIteration -> the same Merge. The
// NextIteration -> Merge input is a back edge, left out of the order; any other cycle is an
// error naming a node on it. Frames follow TensorFlow's executor: a node runs in the frame of
// its inputs, an Enter's output is in the frame its frame_name names (a child of the Enter's
// own), an Exit's in the parent of the frame the Exit runs in.
//
// A TensorFlow 1 conditional (tf.compat.v1.cond) is Switch(x, pred) for each value a branch
// reads, output 1 into the true branch and 0 into the false one, and a Merge of the two
// branches' results. Branches are found the same way as frames: a value a Switch (not a loop's,
// whose pred is a LoopCond) gives on port p is in the branch (pred, p) of the Switch's own
// branch, a node runs in the innermost branch of its inputs, and a Merge of the two branches
// of one pred runs where its Switches do.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "frontend/tf/graph_def.pb.h"

namespace kiln::tf_fe {

using NodeDefs = google::protobuf::RepeatedPtrField<tfpb::NodeDef>;

struct NodeInput {
  int node = -1;  // the producer, or -1 for a function's input argument
  int arg = -1;   // that argument's index
  int output = 0;
  bool control = false;
  bool back_edge = false;  // NextIteration -> Merge
  std::string text;        // as written in the NodeDef
};

struct Frame {
  std::string name;  // Enter's frame_name; "" for the root
  int parent = -1;
  std::vector<int> enters;  // run in the parent frame
  std::vector<int> exits;   // run in this frame, output into the parent
  std::vector<int> nodes;   // every node that runs in this frame, Exits included
  // Producers outside this frame (and its nested ones) whose values its nodes read, Enter
  // inputs included: what must exist before the loop can be built.
  std::vector<int> outer_inputs;
};

// A conditional branch: the values that exist only when `pred` is `port` (1: true). Branch 0 is
// outside every conditional.
struct Branch {
  int parent = -1;
  NodeInput pred;  // the predicate, Identities looked through
  int port = -1;
};

class NodeSet {
 public:
  // `args`: a function body's input argument names (references "arg" and
  // "node:output_arg:k"), or nullptr for a GraphDef ("node", "node:k"). `where` follows the op
  // in errors: "" for the graph, " in function 'f'" for a body.
  NodeSet(const NodeDefs& nodes, const std::vector<std::string>* args, std::string where);

  int size() const { return static_cast<int>(nodes_.size()); }
  const tfpb::NodeDef& node(int i) const { return *nodes_[i]; }
  int find(const std::string& name) const;  // -1 when absent
  const std::vector<NodeInput>& inputs(int i) const { return inputs_[i]; }
  const std::vector<int>& order() const { return order_; }
  int position(int i) const { return position_[i]; }  // in order()
  bool data_consumed(int i) const { return data_consumed_[i]; }
  const std::string& where() const { return where_; }
  // "TensorFlow node 'x' (Op)" plus where().
  std::string describe(int i) const;

  // A reference as this set writes them (a function's `ret` entries), resolved; `what` starts
  // the error when it names nothing.
  NodeInput resolve(const std::string& ref, const std::string& what) const;

  int frame_of(int i) const { return frame_of_[i]; }  // 0: the root
  const Frame& frame(int f) const { return frames_[f]; }
  int num_frames() const { return static_cast<int>(frames_.size()); }
  // True when frame f is `ancestor` or nested in it.
  bool within(int f, int ancestor) const;

  int branch_of(int i) const { return branch_of_[i]; }  // where node i runs
  const Branch& branch(int b) const { return branches_[b]; }
  // The branch of the value r names (a conditional Switch's output is in a branch of its own).
  int value_branch(const NodeInput& r) const;
  bool branch_within(int b, int ancestor) const;
  // A Switch of a conditional (its pred is no LoopCond), a Merge that joins a conditional's two
  // branches (no NextIteration feeds it).
  bool is_cond_switch(int i) const;
  bool is_cond_merge(int i) const;
  // Two predicates are one when they name the same tensor, Identities looked through.
  bool same_pred(const NodeInput& a, const NodeInput& b) const;

 private:
  std::vector<const tfpb::NodeDef*> nodes_;
  std::map<std::string, int> index_;
  std::vector<std::string> args_;
  bool function_ = false;
  std::vector<std::vector<NodeInput>> inputs_;
  std::vector<int> order_, position_;
  std::vector<bool> data_consumed_;
  std::string where_;
  std::vector<int> frame_of_, out_frame_;
  std::vector<Frame> frames_;
  std::vector<int> branch_of_;
  std::vector<Branch> branches_;

  NodeInput parse(const std::string& s, const std::string& what) const;
  void sort();
  void assign_frames();
  void assign_branches();
  NodeInput canonical_pred(int switch_node) const;
  int child_branch(int parent, const NodeInput& pred, int port);
};

}  // namespace kiln::tf_fe
