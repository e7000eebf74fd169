#include "engine/recording/tensor_files.h"

#include <gtest/gtest.h>

#include "tests/support/run_cli.h"

namespace shardscope::engine {
namespace {

TEST(TensorFiles, DictAndTensorRoundTrip) {
  const auto dir = testing::freshTempDir("tensor_files");
  std::map<std::string, at::Tensor> dict = {{"a.weight", at::randn({3, 4})}, {"labels", at::arange(5, at::kLong)}};
  saveTensorDict(dir + "/d.pt", dict);
  auto back = loadTensorDict(dir + "/d.pt");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(at::equal(back["a.weight"], dict["a.weight"]));
  EXPECT_TRUE(at::equal(back["labels"], dict["labels"]));
  auto t = at::randn({7});
  saveTensor(dir + "/t.pt", t);
  EXPECT_TRUE(at::equal(loadTensor(dir + "/t.pt"), t));
}

}  // namespace
}  // namespace shardscope::engine
