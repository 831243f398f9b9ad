// A test suite that loads the default model and its tokenizer once for all its tests.
#pragma once

#include <gtest/gtest.h>

#include "model/model.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite::test {

class DefaultModelTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        model_ = Model::load(default_model_path()).release();
        tokenizer_ = Tokenizer::from_gguf(model_->file()).release();
    }
    static void TearDownTestSuite() {
        delete tokenizer_;
        delete model_;
        tokenizer_ = nullptr;
        model_ = nullptr;
    }

    static inline Model* model_ = nullptr;
    static inline Tokenizer* tokenizer_ = nullptr;
};

}  // namespace kite::test
