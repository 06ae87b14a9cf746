// Shared by every onnxtool compute shader: the element type T (float32, or float16 storage
// when compiled with FP16) and the type ACC of the multiply-accumulate kernels' sums (MatMul,
// Gemm, Conv, ConvTranspose): float32, or float16 when compiled with FP16_ARITHMETIC (the device
// reports shaderFloat16). Every other shader computes in float32 whatever T is. The workgroup
// size comes from the device's limits through specialization constants 0-2.
#extension GL_EXT_shader_16bit_storage : enable
#ifdef FP16
#define T float16_t
#else
#define T float
#endif
#ifdef FP16_ARITHMETIC
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define ACC float16_t
#else
#define ACC float
#endif

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

// The invocation's index in a 1-D dispatch whose grid folds into y past the x limit.
uint linear_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

// The largest rank the strided shaders handle; the host declines higher ranks.
#define MAX_RANK 6
