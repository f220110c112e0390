// Optional values (opsets 15..17): Optional, OptionalHasElement, OptionalGetElement.
//
// An optional holding a value is just that value (a tensor or a sequence); an empty one is a
// Tensor of kind None. The IR type of an optional has is_optional set.
#include "ops/core/registry.h"

namespace kiln::ops {

namespace {

ir::TensorType optional_of(ir::TensorType t) {
  t.is_optional = true;
  return t;
}

}  // namespace

KILN_REGISTER_OPS(optional) {
  // With an input: an optional holding it. Without: an empty optional of the `type` attribute.
  reg.add({.name = "Optional", .since_version = 15, .min_inputs = 0, .max_inputs = 1,
           .infer = [](InferContext& ctx) {
             const ir::Attribute* type = ctx.node().attr("type");
             if (type && type->kind != ir::Attribute::Kind::Type) ctx.fail("attribute 'type' must be a type");
             if (ctx.has_input(0)) {
               const ir::TensorType& t = ctx.input(0);
               if (t.is_optional) ctx.fail("nested optionals are not supported");
               ctx.set_output(0, optional_of(t));
             } else {
               if (!type) ctx.fail("an Optional without input needs the 'type' attribute");
               if (type->type.is_optional) throw UnsupportedError("nested optionals are not supported");
               ctx.set_output(0, optional_of(type->type));
             }
           },
           .kernel = [](KernelContext& ctx) {
             if (ctx.has_input(0)) {
               if (ctx.input(0).is_none()) ctx.fail("nested optionals are not supported");
               ctx.set_output(0, ctx.input(0));
               return;
             }
             const ir::Attribute* type = ctx.node().attr("type");
             if (!type || type->kind != ir::Attribute::Kind::Type)
               ctx.fail("an Optional without input needs the 'type' attribute");
             ctx.set_output(0, Tensor::none(type->type.dtype,
                                            type->type.is_sequence ? ValueKind::Sequence : ValueKind::Tensor));
           }});

  // Opset 18 allows the input to be absent (false) or a plain tensor (true); accepting both
  // here costs nothing.
  reg.add({.name = "OptionalHasElement", .since_version = 15, .max_version = 18, .min_inputs = 0, .max_inputs = 1,
           .infer = [](InferContext& ctx) { ctx.set_output(0, DType::Bool, {}); },
           .kernel = [](KernelContext& ctx) {
             ctx.set_output(0, Tensor::scalar<bool>(ctx.has_input(0) && !ctx.input(0).is_none()));
           }});

  reg.add({.name = "OptionalGetElement", .since_version = 15, .max_version = 18, .min_inputs = 1, .max_inputs = 1,
           .infer = [](InferContext& ctx) {
             ir::TensorType t = ctx.input(0);
             t.is_optional = false;
             ctx.set_output(0, t);
           },
           .kernel = [](KernelContext& ctx) {
             const Tensor& x = ctx.input(0);
             if (x.is_none()) ctx.fail("the optional input is empty");
             ctx.set_output(0, x);
           }});
}

}  // namespace kiln::ops
