"""Exports PyTorch models to ONNX as users do, and what eager PyTorch computes
with them, for tests/nn/onnx/torch_export_test.cc.

Usage: torch_reference.py OUTDIR. For each model NAME it writes NAME.onnx and
NAME.npz holding the input x, the forward's output y and, for models exported
for training, r (sum(y * r) is the loss), the gradient of every parameter
(grad.NAME) and every buffer after the forward (buffer.NAME).
"""
import io
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch

OUT = sys.argv[1]
TRAINING = torch.onnx.TrainingMode.TRAINING
EVAL = torch.onnx.TrainingMode.EVAL


def export(name, model, x, mode, opset, batch, dynamic=True):
    torch.manual_seed(1)
    if mode == TRAINING:  # no random draws to compare
        for m in model.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
    model.train(mode == TRAINING)
    export_x = torch.randn(*((2,) + tuple(x.shape[1:])))
    torch.onnx.export(
        model, (export_x,), f"{OUT}/{name}.onnx", opset_version=opset, training=mode,
        do_constant_folding=mode != TRAINING, input_names=["x"], output_names=["y"],
        dynamic_axes={"x": {0: "N"}, "y": {0: "N"}} if dynamic else None)
    # Exporting for training ran a forward that moved the running statistics:
    # start from what the file holds.
    saved = onnx.load(f"{OUT}/{name}.onnx").graph.initializer
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict({t.name: torch.from_numpy(onnx.numpy_helper.to_array(t).copy())
                           for t in saved if t.name in state}, strict=False)
    arrays = {"x": x.numpy()}
    if mode == TRAINING:
        model.eval()
        with torch.no_grad():
            arrays["y_eval"] = model(x).numpy()
        model.train()
        y = model(x)
        r = torch.randn(y.shape)
        (y * r).sum().backward()
        arrays["r"] = r.numpy()
        for k, p in model.named_parameters():
            arrays[f"grad.{k}"] = p.grad.numpy().copy()
        for k, b in model.named_buffers():
            if b.dtype == torch.float32:
                arrays[f"buffer.{k}"] = b.numpy().copy()  # load_state_dict below writes b
        model.load_state_dict(state)  # the exported weights, for later exports
    else:
        with torch.no_grad():
            y = model(x)
    arrays["y"] = y.detach().numpy()
    np.savez(f"{OUT}/{name}.npz", **arrays)


torch.manual_seed(0)
cnn = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
    torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10))
with torch.no_grad():  # running statistics that are not the defaults
    cnn[1].running_mean.uniform_(-0.5, 0.5)
    cnn[1].running_var.uniform_(0.5, 2)
images = torch.randn(3, 3, 8, 8)
export("cnn_train", cnn, images, TRAINING, 15, 3)
export("cnn_eval", cnn, images, EVAL, 13, 3)  # BatchNorm folded into the Conv

encoder = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
tokens = torch.randn(3, 5, 16)
export("encoder_train", encoder, tokens, TRAINING, 15, 3)
export("encoder_eval", encoder, tokens, EVAL, 14, 3)

mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.GELU(),
                          torch.nn.Linear(16, 4), torch.nn.LogSoftmax(dim=1))
export("mlp_train", mlp, torch.randn(5, 8), TRAINING, 17, 5)


class LastStep(torch.nn.Module):
    """A batch-first LSTM and a linear head on its last output."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 12, batch_first=True)
        self.head = torch.nn.Linear(12, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y[:, -1])


export("lstm_train", LastStep(), torch.randn(4, 6, 8), TRAINING, 14, 4)
export("lstm_eval", LastStep(), torch.randn(4, 6, 8), EVAL, 14, 4)


class Windows(torch.nn.Module):
    """Transposed convolution, ceil-mode and padded pooling, ReLU6 (Clip)."""

    def __init__(self):
        super().__init__()
        self.down = torch.nn.Conv2d(3, 6, 3, stride=2, padding=1)
        self.up = torch.nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1)
        self.pool = torch.nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.avg = torch.nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)

    def forward(self, x):
        y = torch.nn.functional.relu6(self.up(self.down(x)) * 4)
        return self.avg(self.pool(y))


export("windows_train", Windows(), torch.randn(2, 3, 9, 9), TRAINING, 13, 2)

try:
    import torchvision
    # Training inputs whose batch statistics are well conditioned: with 4
    # examples of 64x64, mobilenet_v2's last stages normalise over 16 values
    # each and f32 rounding alone moves PyTorch's own gradients by up to 17%
    # of a tensor's largest (against float64); with 16 examples of 32x32, by
    # 3e-4.
    for net, train_x in (("resnet18", torch.randn(4, 3, 64, 64)),
                         ("mobilenet_v2", torch.randn(16, 3, 32, 32))):
        model = getattr(torchvision.models, net)(num_classes=10)
        export(f"{net}_train", model, train_x, TRAINING, 15, int(train_x.shape[0]))
        export(f"{net}_eval", model, torch.randn(3, 3, 64, 64), EVAL, 13, 3)
except ImportError:
    print("torchvision is not installed: no resnet18 or mobilenet_v2", file=sys.stderr)
