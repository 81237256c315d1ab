"""A Fashion-MNIST CNN in PyTorch, to train in tensorcut through ONNX.

  python3 examples/onnx/fashion_cnn.py export fashion_cnn.onnx
      writes the untrained model exported for training (BatchNorm's batch
      statistics and Dropout kept, PyTorch's parameter names);
  tensorcut train --onnx fashion_cnn.onnx --steps 600
      trains it in C++ and writes tensorcut_fashion_cnn.safetensors;
  python3 examples/onnx/fashion_cnn.py evaluate tensorcut_fashion_cnn.safetensors
      loads the trained weights into the PyTorch model with load_state_dict and
      prints its accuracy on Fashion-MNIST's test set.

Needs Debian's python3-torch and python3-onnx, and the dataset-fashion-mnist package.
"""
import gzip
import json
import sys

import numpy as np
import torch

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Dropout(0.2), torch.nn.Linear(32 * 7 * 7, 10))


def export(path):
    torch.manual_seed(0)
    torch.onnx.export(model(), torch.randn(2, 1, 28, 28), path, opset_version=15,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["images"], output_names=["logits"],
                      dynamic_axes={"images": {0: "N"}, "logits": {0: "N"}})
    print(f"wrote {path}")


def read_safetensors(path):
    """The tensors of a safetensors file: an 8-byte header length, a JSON
    header of names, dtypes, shapes and offsets, then the bytes."""
    dtypes = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "BOOL": np.bool_}
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    return {name: torch.from_numpy(np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]],
                                                 dtype=dtypes[e["dtype"]]).reshape(e["shape"]).copy())
            for name, e in header.items() if name != "__metadata__"}


def evaluate(path):
    net = model()
    state = read_safetensors(path)
    # The checkpoint also holds the optimizer's state ("optim.*"), and no
    # num_batches_tracked, which eval mode does not read.
    missing, unexpected = net.load_state_dict(
        {k: v for k, v in state.items() if not k.startswith("optim.")}, strict=False)
    assert all(k.endswith("num_batches_tracked") for k in missing), missing
    assert not unexpected, unexpected
    with gzip.open(f"{FASHION_MNIST}/t10k-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(f"{FASHION_MNIST}/t10k-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    net.eval()
    with torch.no_grad():
        logits = net(torch.from_numpy(images.astype(np.float32) / 255))
    accuracy = (logits.argmax(1).numpy() == labels).mean()
    print(f"PyTorch, the weights tensorcut trained: test accuracy {100 * accuracy:.2f}%")


if __name__ == "__main__":
    {"export": export, "evaluate": evaluate}[sys.argv[1]](sys.argv[2])
