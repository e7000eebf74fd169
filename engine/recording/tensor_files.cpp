#include "engine/recording/tensor_files.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/serialize.h>

namespace shardscope::engine {

namespace {

// torch::pickle_save tags dicts with torch.jit type annotations, which torch.load's default
// weights_only unpickler rejects. An untagged pickle in the same zip layout loads everywhere.
void writeTorchFile(const std::string& path, const c10::IValue& value) {
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* data, size_t size) { pickle.insert(pickle.end(), data, data + size); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
                              /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();
  caffe2::serialize::PyTorchStreamWriter writer(path);
  torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
}

c10::IValue readIValue(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return torch::pickle_load(bytes);
}

}  // namespace

void saveTensorDict(const std::string& path, const std::map<std::string, at::Tensor>& tensors) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, t] : tensors) dict.insert(name, t.detach().to(at::kCPU).contiguous());
  writeTorchFile(path, c10::IValue(dict));
}

void saveTensor(const std::string& path, const at::Tensor& tensor) {
  writeTorchFile(path, c10::IValue(tensor.detach().to(at::kCPU).contiguous()));
}

std::map<std::string, at::Tensor> loadTensorDict(const std::string& path) {
  std::map<std::string, at::Tensor> out;
  for (const auto& entry : readIValue(path).toGenericDict()) {
    out[entry.key().toStringRef()] = entry.value().toTensor();
  }
  return out;
}

at::Tensor loadTensor(const std::string& path) { return readIValue(path).toTensor(); }

}  // namespace shardscope::engine
