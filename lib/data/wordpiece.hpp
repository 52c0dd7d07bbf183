#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vocabulary.hpp"

namespace csrun::data {

// Google's BERT tokenizer (FullTokenizer), which the Model Zoo's GLUE processors run on raw text:
// the basic tokenizer (whitespace, then every punctuation character on its own; lower case with
// do_lower) and WordPiece (the longest vocabulary entry first, continuations as "##piece", a word
// of more than 100 characters or with no split as [UNK]). Text is read as UTF-8 bytes: ASCII is
// lowered and split on ASCII punctuation; other characters stay within words, and accents are not
// stripped.
class WordPieceTokenizer {
 public:
  WordPieceTokenizer(const Vocabulary& vocabulary, bool lower, std::string unknown = "[UNK]");

  std::vector<std::string> tokens(std::string_view text) const;

 private:
  void word_pieces(const std::string& word, std::vector<std::string>& out) const;

  const Vocabulary& vocabulary_;
  bool lower_;
  std::string unknown_;
};

}  // namespace csrun::data
