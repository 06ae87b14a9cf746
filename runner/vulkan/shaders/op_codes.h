// The op codes of the shaders that switch on an op: one list per shader, included by the shader
// and by the C++ that records it (runner/vulkan/elementwise.cpp, reduce.h), so that the two cannot
// number an op differently. Valid C++ and GLSL: each list is X(Name, code), which OP_CODE turns
// into the enumerator kName = code in C++ (enum class BinaryOp : uint32_t { BINARY_OPS(OP_CODE) })
// and into the constant kName, for case labels, in GLSL.
#ifndef ONNXTOOL_VULKAN_OP_CODES_H
#define ONNXTOOL_VULKAN_OP_CODES_H

#ifdef __cplusplus
#define OP_CODE(name, code) k##name = code,
#else
#define OP_CODE(name, code) const uint k##name = code;
#endif

// unary.comp: y = f(x), alpha and beta the op's attributes. The third column is 1 when the code
// computes the ONNX op of that name with the generic unary kernel, which runner/vulkan/
// elementwise.cpp registers from this list (and tests/vulkan_elementwise_test.cpp tests from it);
// 0 when another kernel records it (Clip and Gelu read inputs or attributes of their own).
#define UNARY_CODE(name, code, onnx_op) OP_CODE(name, code)
#define UNARY_OPS(X)                                                                                 \
  X(Relu, 0u, 1) X(LeakyRelu, 1u, 1) X(Sigmoid, 2u, 1) X(Tanh, 3u, 1) X(Exp, 4u, 1) X(Log, 5u, 1)      \
  X(Sqrt, 6u, 1) X(Abs, 7u, 1) X(Neg, 8u, 1) X(Reciprocal, 9u, 1) X(Floor, 10u, 1) X(Ceil, 11u, 1)    \
  X(Round, 12u, 1) X(Sin, 13u, 1) X(Cos, 14u, 1) X(Erf, 15u, 1) X(Elu, 16u, 1) X(Selu, 17u, 1)        \
  X(HardSigmoid, 18u, 1) X(HardSwish, 19u, 1) X(Softplus, 20u, 1) X(Clip, 21u, 0) X(Gelu, 22u, 0)     \
  X(GeluTanh, 23u, 0) X(Mish, 24u, 1) X(Softsign, 25u, 1) X(Affine, 26u, 0) X(Identity, 27u, 0)       \
  X(Celu, 28u, 1) X(ThresholdedRelu, 29u, 1) X(Sign, 30u, 1) X(Tan, 31u, 1) X(Atan, 32u, 1)           \
  X(Swish, 33u, 1) X(Shrink, 34u, 1)

// binary.comp: c = f(a, b).
#define BINARY_OPS(X) \
  X(Add, 0u) X(Sub, 1u) X(Mul, 2u) X(Div, 3u) X(Pow, 4u) X(Max, 5u) X(Min, 6u) X(PRelu, 7u)

// reduce.comp: Reduce* and global pooling (MaxNum: GlobalMaxPool, which ignores NaN).
#define REDUCE_OPS(X)                                                                        \
  X(Sum, 0u) X(Mean, 1u) X(Max, 2u) X(Min, 3u) X(Prod, 4u) X(L1, 5u) X(L2, 6u) X(LogSum, 7u) \
  X(LogSumExp, 8u) X(SumSquare, 9u) X(MaxNum, 10u)

// axis.comp: the ops that normalize groups along an axis.
#define AXIS_OPS(X) \
  X(Softmax, 0u) X(LogSoftmax, 1u) X(Hardmax, 2u) X(Lp1, 3u) X(Lp2, 4u)

#endif
