// Files that Python's torch.load reads: a dict of name -> tensor, or one tensor, written with
// torch::pickle_save (the same zip/pickle format as torch.save).
#pragma once

#include <map>
#include <string>

#include <ATen/ATen.h>

namespace shardscope::engine {

void saveTensorDict(const std::string& path, const std::map<std::string, at::Tensor>& tensors);
void saveTensor(const std::string& path, const at::Tensor& tensor);
std::map<std::string, at::Tensor> loadTensorDict(const std::string& path);
at::Tensor loadTensor(const std::string& path);

}  // namespace shardscope::engine
