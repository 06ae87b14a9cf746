// The pass functions of the pipeline (one file each in passes/; the order lives in pipeline.cpp).
#pragma once

#include "passes/pass.h"

namespace onnxtool::passes {

PassStats sort_topologically(ir::Model& model, const PassContext& context);
PassStats fold_constants(ir::Model& model, const PassContext& context);
PassStats eliminate_noops(ir::Model& model, const PassContext& context);
PassStats eliminate_common_subexpressions(ir::Model& model, const PassContext& context);
PassStats eliminate_dead_code(ir::Model& model, const PassContext& context);
PassStats fuse_conv_batchnorm(ir::Model& model, const PassContext& context);
PassStats fuse_conv_add_mul(ir::Model& model, const PassContext& context);
PassStats fuse_conv_input_affine(ir::Model& model, const PassContext& context);
PassStats fuse_matmul_add(ir::Model& model, const PassContext& context);
PassStats fuse_gemm_batchnorm(ir::Model& model, const PassContext& context);
PassStats fuse_transposes(ir::Model& model, const PassContext& context);
PassStats fuse_transpose_gemm(ir::Model& model, const PassContext& context);
PassStats fuse_pad_conv(ir::Model& model, const PassContext& context);
PassStats fuse_relu_clip(ir::Model& model, const PassContext& context);
PassStats fuse_layernorm(ir::Model& model, const PassContext& context);
PassStats fuse_gelu(ir::Model& model, const PassContext& context);
PassStats fuse_hardswish(ir::Model& model, const PassContext& context);

}  // namespace onnxtool::passes
