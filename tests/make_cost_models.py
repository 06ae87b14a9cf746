#!/usr/bin/python3
"""ResNet-50 and MobileNetV2 in torchvision's layout, random weights, for `inspect --cost`.

    tests/make_cost_models.py OUT_DIR

Writes OUT_DIR/resnet50.onnx (about 100 MB) and OUT_DIR/mobilenet_v2.onnx (about 14 MB), opset
13, input `image` float[1,3,224,224], output `logits` float[1,1000]. Their costs are checked
against the published figures (tests/cli/cost.sh, docs/commands/inspect.md); the files are
written to a scratch folder by that test, never committed.

 - ResNet-50 v1.5 (torchvision.models.resnet50): 7x7 stem of stride 2, 3x3 max pool, bottleneck
   blocks [3, 4, 6, 3] of widths 64..512 (expansion 4) with the stride on the 3x3 convolution, a
   1x1 projection on the first block of each stage, global average pool, fc 2048 -> 1000.
 - MobileNetV2 (torchvision.models.mobilenet_v2, width 1.0): 3x3 stem of stride 2 to 32
   channels, the inverted residual blocks (expansion, channels, repeats, stride) of the paper,
   1x1 to 1280, global average pool, classifier 1280 -> 1000. ReLU6 is Clip(0, 6), its bounds two
   initializers every Clip shares.

Convolutions have no bias; every BatchNormalization is a node of its own (not folded), with its
scale, bias, mean and variance as initializers: the parameter count therefore includes the
running mean and variance, which torchvision keeps as buffers, not parameters.
Needs Debian's python3 with python3-onnx and python3-numpy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.weights, self.count = [], [], 0

    def name(self, base):
        self.count += 1
        return "%s_%d" % (base, self.count)

    def weight(self, base, shape, fill=None):
        n = self.name(base)
        data = np.full(shape, fill, np.float32) if fill is not None else self.rng.standard_normal(shape, np.float32) * 0.05
        self.weights.append(numpy_helper.from_array(data, n))
        return n

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, x, cin, cout, k, stride=1, groups=1, act=None):
        w = self.weight("w", (cout, cin // groups, k, k))
        y = self.node("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=groups)
        bn = [self.weight("gamma", (cout,), 1.0), self.weight("beta", (cout,), 0.0),
              self.weight("mean", (cout,), 0.0), self.weight("var", (cout,), 1.0)]
        y = self.node("BatchNormalization", [y] + bn)
        if act == "relu":
            y = self.node("Relu", [y])
        elif act == "relu6":
            y = self.node("Clip", [y, "relu6_min", "relu6_max"])
        return y

    def head(self, x, channels):
        y = self.node("GlobalAveragePool", [x])
        y = self.node("Flatten", [y], axis=1)
        w, b = self.weight("fc_w", (1000, channels)), self.weight("fc_b", (1000,), 0.0)
        self.nodes.append(helper.make_node("Gemm", [y, w, b], ["logits"], name="fc", transB=1))

    def save(self, path, graph_name):
        graph = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 224, 224])],
            [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], self.weights)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_cost_models.py")
        model.ir_version = 7
        onnx.save(model, path)


def resnet50(path):
    b = Builder(50)
    x = b.conv_bn("image", 3, 64, 7, stride=2, act="relu")
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for planes, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            s = stride if i == 0 else 1
            y = b.conv_bn(x, cin, planes, 1, act="relu")
            y = b.conv_bn(y, planes, planes, 3, stride=s, act="relu")
            y = b.conv_bn(y, planes, planes * 4, 1)
            shortcut = b.conv_bn(x, cin, planes * 4, 1, stride=s) if i == 0 else x
            x = b.node("Relu", [b.node("Add", [y, shortcut])])
            cin = planes * 4
    b.head(x, 2048)
    b.save(path, "resnet50")


def mobilenet_v2(path):
    b = Builder(2)
    b.weights += [numpy_helper.from_array(np.array(0, np.float32), "relu6_min"),
                  numpy_helper.from_array(np.array(6, np.float32), "relu6_max")]
    x = b.conv_bn("image", 3, 32, 3, stride=2, act="relu6")
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = b.conv_bn(x, cin, hidden, 1, act="relu6") if t != 1 else x
            y = b.conv_bn(y, hidden, hidden, 3, stride=stride, groups=hidden, act="relu6")
            y = b.conv_bn(y, hidden, c, 1)
            x = b.node("Add", [x, y]) if stride == 1 and cin == c else y
            cin = c
    x = b.conv_bn(x, 320, 1280, 1, act="relu6")
    b.head(x, 1280)
    b.save(path, "mobilenet_v2")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    resnet50(os.path.join(sys.argv[1], "resnet50.onnx"))
    mobilenet_v2(os.path.join(sys.argv[1], "mobilenet_v2.onnx"))


if __name__ == "__main__":
    main()
