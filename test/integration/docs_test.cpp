// The user docs list every key csrun accepts: a key added to a schema without documentation
// fails here, naming it.

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "compiler/compile.hpp"
#include "compiler/kernel_library.hpp"
#include "config/class_catalog.hpp"
#include "data/processor_registry.hpp"
#include "models/registry.hpp"

namespace {

std::string read_doc(const std::string& name) {
  std::ifstream file(std::string(CSRUN_SOURCE_DIR) + "/docs/" + name);
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The section of `doc` under the heading "### <title>", up to the next "### ".
std::string section(const std::string& doc, const std::string& title) {
  std::size_t start = doc.find("### " + title + "\n");
  if (start == std::string::npos) return {};
  std::size_t end = doc.find("\n### ", start + 1);
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

void check_schema(const std::string& doc, const std::string& title,
                  const csrun::config::Schema& schema) {
  std::string text = section(doc, title);
  INFO("section ### " << title);
  REQUIRE_FALSE(text.empty());
  for (const csrun::config::Field& field : schema.fields()) {
    INFO("key " << field.name);
    CHECK(text.find("`" + field.name + "`") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("docs/models.md lists every key of every model") {
  std::string doc = read_doc("models.md");
  for (const auto& model : csrun::models::model_registry())
    check_schema(doc, model.name, *model.schema);
}

TEST_CASE("docs/data.md lists every key of every data processor") {
  std::string doc = read_doc("data.md");
  for (const auto& processor : csrun::data::processor_registry()) {
    check_schema(doc, processor.name, *processor.schema);
  }
}

TEST_CASE("docs/params.md lists every optimizer, scheduler, callback and logger with its keys") {
  std::string doc = read_doc("params.md");
  for (const auto* catalog :
       {&csrun::config::optimizer_catalog(), &csrun::config::scheduler_catalog(),
        &csrun::config::callback_catalog(), &csrun::config::logger_catalog()}) {
    for (const std::string& name : catalog->names())
      check_schema(doc, name, *catalog->find(name)->params);
  }
}

TEST_CASE("docs/compiler.md lists every pass and every kernel of the library") {
  std::string doc = read_doc("compiler.md");
  for (const std::string& pass : csrun::compiler::dump_points()) {
    INFO("pass " << pass);
    CHECK(doc.find("`" + pass + "`") != std::string::npos);
  }
  for (const csrun::compiler::KernelSpec& kernel : csrun::compiler::kernel_library()) {
    INFO("kernel " << kernel.name);
    CHECK(doc.find("| `" + std::string(kernel.name) + "` |") != std::string::npos);
  }
}
