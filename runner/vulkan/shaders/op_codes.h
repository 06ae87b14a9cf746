// The op codes of the shaders that switch on an op: one list per shader, included by the shader
// and by the C++ that records it (runner/vulkan/elementwise.cpp, nn.cpp), so that the two cannot
// number an op differently. Valid C++ and GLSL: each list is X(Name, code), which OP_CODE turns
// into the enumerator kName = code in C++ (enum class UnaryOp : uint32_t { UNARY_OPS(OP_CODE) })
// and into the constant kName, for case labels, in GLSL.
#ifndef ONNXTOOL_VULKAN_OP_CODES_H
#define ONNXTOOL_VULKAN_OP_CODES_H

#ifdef __cplusplus
#define OP_CODE(name, code) k##name = code,
#else
#define OP_CODE(name, code) const uint k##name = code;
#endif

// unary.comp: y = f(x), alpha and beta the op's attributes.
#define UNARY_OPS(X)                                                                            \
  X(Relu, 0u) X(LeakyRelu, 1u) X(Sigmoid, 2u) X(Tanh, 3u) X(Exp, 4u) X(Log, 5u) X(Sqrt, 6u)     \
  X(Abs, 7u) X(Neg, 8u) X(Reciprocal, 9u) X(Floor, 10u) X(Ceil, 11u) X(Round, 12u) X(Sin, 13u)  \
  X(Cos, 14u) X(Erf, 15u) X(Elu, 16u) X(Selu, 17u) X(HardSigmoid, 18u) X(HardSwish, 19u)        \
  X(Softplus, 20u) X(Clip, 21u) X(Gelu, 22u) X(GeluTanh, 23u) X(Mish, 24u) X(Softsign, 25u)     \
  X(Affine, 26u) X(Identity, 27u) X(Celu, 28u) X(ThresholdedRelu, 29u) X(Sign, 30u) X(Tan, 31u) \
  X(Atan, 32u) X(Swish, 33u) X(Shrink, 34u)

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
