#include "tensorflow_layout.hpp"

#include "overrides.hpp"

#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace csrun::config {

namespace {

// The networks whose TensorFlow keys differ from their PyTorch ones beyond the shared rules.
enum class Network { t5, transformer, unet, gptj, other };

class TensorflowTranslator {
 public:
  TensorflowTranslator(const Node& params, Diagnostics& diagnostics)
      : params_(params), diagnostics_(diagnostics), network_(network_of(params)) {}

  Node translate() {
    Node* model = map_section("model");
    if (model) translate_model(*model);
    translate_inputs();
    if (Node* optimizer = map_section("optimizer")) translate_optimizer(*optimizer);
    return std::move(params_);
  }

 private:
  static Network network_of(const Node& params) {
    const Node* input = params.find("train_input");
    if (!input || !input->is_map()) return Network::other;
    if (input->contains("dataset") && !input->contains("data_processor")) return Network::unet;
    const Node* processor = input->find("data_processor");
    std::string name = processor && processor->is_string() ? processor->as_string() : "";
    if (name == "T5DynamicDataProcessor") return Network::t5;
    if (name == "TransformerDynamicDataProcessor") return Network::transformer;
    // Of the TensorFlow GPT models only GPT-J has rotary positions.
    const Node* model = params.find("model");
    if (model && model->is_map() && model->contains("rotary_dim")) return Network::gptj;
    return Network::other;
  }

  Node* map_section(const char* key) {
    Node* section = params_.find(key);
    return section && section->is_map() ? section : nullptr;
  }

  // `key` becomes `modern` in `section`; a modern key written too wins.
  void rename(Node& section, const char* key, const char* modern, const std::string& why) {
    const Node::Entry* found = section.find_entry(key);
    if (!found) return;
    Node::Entry entry = *found;
    section.take(key);
    if (section.contains(modern)) {
      diagnostics_.warning(entry.key_mark, entry.value.path(),
                           why + "; " + modern + " is set too and wins");
      return;
    }
    diagnostics_.warning(entry.key_mark, entry.value.path(), why + "; csrun reads it as " + modern);
    section.set(modern, entry.value, entry.key_mark);
  }

  void drop(Node& section, const char* key, const std::string& why) {
    const Node::Entry* found = section.find_entry(key);
    if (!found) return;
    diagnostics_.warning(found->key_mark, found->value.path(), why + "; it has no effect");
    section.take(key);
  }

  // A default of the TensorFlow model that the PyTorch layout spells out (or defaults otherwise).
  void default_to(Node& section, const char* key, Node value, const std::string& why) {
    if (section.contains(key)) return;
    std::string path = join_path(section.path(), key);
    diagnostics_.note(section.mark(), path, why + "; csrun sets " + key + ": " + value.render());
    value.set_mark(section.mark());
    value.set_path(path);
    section.set(key, std::move(value), section.mark());
  }

  // BERT and its relatives (RoBERTa, PubMedBERT, Linformer).
  bool bert_family(const Node& model) const {
    return network_ == Network::other && model.contains("encoder_nonlinearity");
  }

  // fc_mnist: named so, or known by its layer sizes (its 1.6 file names no network).
  bool fc_mnist(const Node& model) const {
    return network_ == Network::other &&
           (model.text_or("name", "") == "fc_mnist" || model.contains("hidden_sizes") ||
            model.contains("depth"));
  }

  void translate_model(Node& model) {
    if (fc_mnist(model)) {
      default_to(model, "compute_eval_metrics", Node::make_bool(true),
                 "the TensorFlow fc_mnist always reports its accuracy");
    }
    move_input_vocab_size(model);
    use_tanh_gelu(model);
    read_initializer_lists(model);
    for (const char* key : {"boundary_casting", "tf_summary"}) {
      if (network_ != Network::other) {
        drop(model, key, std::string(key) + " is a TensorFlow-era model key");
      }
    }
    if (bert_family(model)) {
      default_to(model, "mlm_loss_scaling", Node::make_string("precomputed_num_masked"),
                 "the TensorFlow BERT's masked-LM loss is the mean over the masked tokens "
                 "(times mlm_loss_weight)");
    }
    if (network_ == Network::t5) translate_t5_model(model);
    if (network_ == Network::transformer) translate_transformer_model(model);
    if (network_ == Network::gptj) translate_gptj_model(model);
    if (network_ == Network::t5 || network_ == Network::transformer) weigh_target_tokens(model);
    if (network_ == Network::unet) {
      for (const char* key : {"data_format", "log_image_summaries"}) {
        drop(model, key, std::string(key) + " is a TensorFlow-era model key");
      }
      default_unet_metrics(model);
    }
  }

  // The TensorFlow GPT-J (rotary positions, a parallel block with one shared LayerNorm: csrun's
  // gptj) without dropout unless asked, a tied LM head with a bias, and its first feed-forward
  // layer initialized as the attention projections are (the PyTorch GPT-J's is initialized as
  // the output layers).
  void translate_gptj_model(Node& model) {
    default_to(model, "name", Node::make_string("gptj"),
               "a TensorFlow-layout GPT model with rotary_dim is the TensorFlow GPT-J");
    for (const char* key :
         {"embedding_dropout_rate", "attention_dropout_rate", "residual_dropout_rate"}) {
      default_to(model, key, Node::make_number(0.0),
                 "the TensorFlow GPT-J's dropout rates default to 0");
    }
    default_to(model, "share_embedding_weights", Node::make_bool(true),
               "the TensorFlow GPT-J ties its LM head to the embeddings unless told");
    default_to(model, "use_bias_in_output", Node::make_bool(true),
               "the TensorFlow GPT-J's LM head has a bias unless told");
    default_to(model, "layer_norm_epsilon", Node::make_number(1e-8),
               "the TensorFlow GPT-J's layer_norm_epsilon defaults to 1e-8");
    const Node::Entry* kernel = model.find_entry("initializer");
    if (!kernel || model.contains("ffn_initializer")) return;
    Node ffn = kernel->value;
    SourceMark mark = kernel->key_mark;
    diagnostics_.note(mark, join_path(model.path(), "ffn_initializer"),
                      "the TensorFlow GPT-J initializes its first feed-forward layer with "
                      "`initializer`; csrun sets ffn_initializer to it");
    relocate(ffn, ffn.mark(), join_path(model.path(), "ffn_initializer"));
    model.set("ffn_initializer", std::move(ffn), mark);
  }

  // The TensorFlow UNet's default eval_metrics hold MPCA, which the PyTorch ones do not.
  void default_unet_metrics(Node& model) {
    if (model.contains("eval_metrics")) return;
    std::string path = join_path(model.path(), "eval_metrics");
    Node metrics = Node::make_list(model.mark(), path);
    for (const char* name : {"mIOU", "DSC", "MPCA", "Acc"})
      metrics.push_back(Node::make_string(name, model.mark(), path));
    model.set("eval_metrics", std::move(metrics), model.mark());
  }

  // The TensorFlow GPT and BERT models read the vocabulary size from train_input.
  void move_input_vocab_size(Node& model) {
    if (network_ == Network::t5 || network_ == Network::transformer) return;
    const Node* input = params_.find("train_input");
    const Node::Entry* vocab = input && input->is_map() ? input->find_entry("vocab_size") : nullptr;
    if (!vocab || model.contains("vocab_size")) return;
    diagnostics_.warning(vocab->key_mark, vocab->value.path(),
                         "the TensorFlow layout gives the model's vocabulary size in "
                         "train_input; csrun reads it as model.vocab_size");
    model.set("vocab_size", vocab->value, vocab->key_mark);
  }

  // TensorFlow's gelu layer is the tanh approximation (csrun's and Hugging Face's gelu_new); the
  // BERT family's masked-LM head uses it when mlm_nonlinearity is not given.
  void use_tanh_gelu(Node& model) {
    for (const char* key :
         {"nonlinearity", "encoder_nonlinearity", "decoder_nonlinearity", "mlm_nonlinearity"}) {
      const Node::Entry* entry = model.find_entry(key);
      if (!entry || !entry->value.is_string() || entry->value.as_string() != "gelu") continue;
      diagnostics_.warning(entry->key_mark, entry->value.path(),
                           "the TensorFlow layout's gelu is the tanh approximation; csrun reads "
                           "it as gelu_new");
      SourceMark mark = entry->key_mark;
      model.set(key, Node::make_string("gelu_new", entry->value.mark(), entry->value.path()), mark);
    }
    if (bert_family(model) && !model.contains("mlm_nonlinearity")) {
      model.set(
          "mlm_nonlinearity",
          Node::make_string("gelu_new", model.mark(), join_path(model.path(), "mlm_nonlinearity")),
          model.mark());
    }
  }

  // TensorFlow-layout models (GPT-J) write each initializer as a list and use its first entry,
  // with two initializers of their own: scaled_init_normal (sigma / sqrt(vocab_size, 2 x layers
  // or 1)) and variance_scaling with a scale_type (small_init: 0.4, wang_init: 4 / layers^2).
  void read_initializer_lists(Node& model) {
    std::vector<std::string> keys;
    for (const Node::Entry& entry : model.entries()) {
      if (entry.key.ends_with("initializer") && entry.value.is_list()) keys.push_back(entry.key);
    }
    for (const std::string& key : keys) {
      const Node::Entry& entry = *model.find_entry(key);
      const Node& list = entry.value;
      if (list.items().empty() || !list.items().front().is_map()) {
        diagnostics_.error(list.mark(), list.path(),
                           "expected a list whose first entry is an initializer mapping (the "
                           "TensorFlow layout uses that entry); found " +
                               list.describe());
        continue;
      }
      if (list.items().size() > 1) {
        diagnostics_.warning(list.items()[1].mark(), list.path(),
                             "the TensorFlow layout uses the first initializer of the list only; "
                             "csrun ignores the others");
      }
      std::optional<Node> initializer = initializer_of(list.items().front(), model);
      if (!initializer) continue;
      diagnostics_.warning(entry.key_mark, list.path(),
                           "a list of initializers (TensorFlow layout); csrun reads it as its "
                           "first entry");
      SourceMark mark = entry.key_mark;
      model.set(key, std::move(*initializer), mark);
    }
  }

  std::optional<double> layer_count(const Node& written, const Node& model,
                                    const std::string& kind) {
    const Node* count = model.find("num_hidden_layers");
    if (count && count->is_int() && count->as_int() > 0) return count->as_number();
    diagnostics_.error(written.mark(), written.path(),
                       kind + " needs model.num_hidden_layers (a positive integer)");
    return std::nullopt;
  }

  std::optional<Node> scaled_init_normal(const Node& written, const Node& model) {
    const Node* by = written.find("key");
    std::string key = by && by->is_string() ? by->as_string() : "";
    double divisor = 1.0;
    if (key == "num_hidden_layers") {
      std::optional<double> count = layer_count(written, model, "scaled_init_normal");
      if (!count) return std::nullopt;
      divisor = 2.0 * *count;
    } else if (key == "vocab_size") {
      const Node* vocab = model.find("vocab_size");
      if (!vocab || !vocab->is_int() || vocab->as_int() < 1) {
        diagnostics_.error(written.mark(), written.path(),
                           "scaled_init_normal by vocab_size needs the vocabulary size "
                           "(model.vocab_size or train_input.vocab_size)");
        return std::nullopt;
      }
      divisor = vocab->as_number();
    }
    Node spec = Node::make_map(written.mark(), written.path());
    std::string distribution = written.text_or("distribution", "truncated_normal");
    spec.set("name",
             Node::make_string(distribution == "untruncated_normal" ? "normal" : distribution,
                               written.mark()));
    spec.set("mean", Node::make_number(written.number_or("mean", 0.0), written.mark()));
    spec.set("std", Node::make_number(written.number_or("sigma", 1.0) / std::sqrt(divisor),
                                      written.mark()));
    return spec;
  }

  // Keras's VarianceScaling draws a "truncated_normal" (TensorFlow 1's "normal") cut at two of
  // its deviations, which depend on each weight's fan: the PyTorch layout's variance_scaling has
  // no such cut (its truncated normal's bounds are absolute), so csrun draws from the
  // untruncated normal of the same variance.
  std::string pytorch_distribution(const Node& written) {
    std::string distribution = written.text_or("distribution", "truncated_normal");
    if (distribution == "uniform") return distribution;
    if (distribution != "untruncated_normal") {
      diagnostics_.note(written.mark(), written.path(),
                        "Keras's variance_scaling cuts its truncated normal at two of its "
                        "deviations, which the PyTorch layout cannot say; csrun draws from the "
                        "normal distribution of the same variance");
    }
    return "normal";
  }

  std::optional<Node> variance_scaling(const Node& written, const Node& model) {
    double scale = written.number_or("scale", 1.0);
    if (const Node* type = written.find("scale_type"); type && type->is_string()) {
      bool wang = type->as_string() == "wang_init";
      std::optional<double> count = wang ? layer_count(written, model, "wang_init") : 1.0;
      if (!count) return std::nullopt;
      scale = wang ? 4.0 / (*count * *count) : 0.4;
    }
    Node spec = Node::make_map(written.mark(), written.path());
    spec.set("name", Node::make_string("variance_scaling", written.mark()));
    spec.set("scale", Node::make_number(scale, written.mark()));
    spec.set("mode", text_or(written, "mode", "fan_in"));
    spec.set("distribution",
             Node::make_string(pytorch_distribution(written), written.mark(), written.path()));
    return spec;
  }

  std::optional<Node> initializer_of(const Node& written, const Node& model) {
    const Node* name = written.find("name");
    std::string kind = name && name->is_string() ? name->as_string() : "";
    if (kind == "scaled_init_normal") return scaled_init_normal(written, model);
    if (kind == "variance_scaling") return variance_scaling(written, model);
    // Keras spells the parameters of the common initializers differently.
    Node spec = Node::make_map(written.mark(), written.path());
    for (const Node::Entry& entry : written.entries()) {
      std::string key = entry.key == "stddev"   ? "std"
                        : entry.key == "minval" ? "a"
                        : entry.key == "maxval" ? "b"
                                                : entry.key;
      spec.set(key, entry.value, entry.key_mark);
    }
    return spec;
  }

  static Node text_or(const Node& map, const char* key, const char* fallback) {
    return Node::make_string(map.text_or(key, fallback), map.mark());
  }

  // Attention of the TensorFlow T5 and Transformer: the only type each computes maps, any other
  // cannot be built as written.
  void check_attention_type(Node& model, const char* computed, const std::string& network) {
    const Node::Entry* entry = model.find_entry("attention_type");
    if (!entry) return;
    if (entry->value.is_string() && entry->value.as_string() == computed) {
      diagnostics_.note(entry->key_mark, entry->value.path(),
                        "attention_type " + std::string(computed) + " is what the PyTorch " +
                            network + " computes; the key has no effect there");
    } else {
      diagnostics_.error(entry->value.mark(), entry->value.path(),
                         "the TensorFlow " + network +
                             " maps onto the PyTorch one only with "
                             "attention_type: " +
                             computed + "; found " + entry->value.render());
    }
    model.take("attention_type");
  }

  // Under precomputed_num_masked TensorFlow's T5 and Transformer scale each batch's loss by the
  // batch / its target tokens (the data's loss_scale), in training and evaluation alike: the
  // data's dynamic_loss_weight, which PyTorch's evaluation data leaves off.
  void weigh_target_tokens(const Node& model) {
    const Node* scaling = model.find("mlm_loss_scaling");
    if (!scaling || !scaling->is_string() || scaling->as_string() != "precomputed_num_masked")
      return;
    for (const char* key : {"train_input", "eval_input"}) {
      Node* input = params_.find(key);
      if (!input || !input->is_map() || input->contains("dynamic_loss_weight")) continue;
      input->set("dynamic_loss_weight",
                 Node::make_bool(true, scaling->mark(), std::string(key) + ".dynamic_loss_weight"),
                 scaling->mark());
    }
  }

  // Release 1.6's TensorFlow T5, as Release 1.9's PyTorch port of it writes the same model.
  void translate_t5_model(Node& model) {
    const std::string t5 = "the TensorFlow T5";
    drop(model, "positional_embedding_type",
         "positional_embedding_type is read by no release's T5 (use_relative_attention_bias "
         "decides)");
    check_attention_type(model, "dot_product", "T5");
    if (const Node::Entry* found = model.find_entry("use_relative_attention_bias")) {
      Node::Entry entry = *found;
      model.take("use_relative_attention_bias");
      bool relative = !entry.value.is_bool() || entry.value.as_bool();
      diagnostics_.warning(entry.key_mark, entry.value.path(),
                           "use_relative_attention_bias is the TensorFlow T5's switch; csrun "
                           "reads it as position_embedding_type: " +
                               std::string(relative ? "relative" : "null"));
      if (!model.contains("position_embedding_type")) {
        model.set("position_embedding_type",
                  relative ? Node::make_string("relative", entry.value.mark(), entry.value.path())
                           : Node::make_null(entry.value.mark(), entry.value.path()),
                  entry.key_mark);
      }
    }
    default_to(model, "position_embedding_type", Node::make_string("relative"),
               t5 + " uses relative attention biases by default");
    rename(model, "num_relative_attention_buckets", "relative_attention_num_buckets",
           "num_relative_attention_buckets is the TensorFlow T5's spelling");
    default_to(model, "norm_type", Node::make_string("layernorm"),
               t5 + " normalizes with a plain layer norm");
    default_to(model, "use_ffn_bias", Node::make_bool(true), t5 + " has feed-forward biases");
    default_to(model, "layer_norm_epsilon", Node::make_number(1e-5),
               t5 + "'s layer-norm epsilon is 1e-5");
    default_to(model, "lm_loss_weight", Node::make_number(0.015),
               t5 + " weights its loss by 0.015");
    default_to(model, "mlm_loss_scaling", Node::make_string("precomputed_num_masked"),
               t5 + " scales its loss by the precomputed number of masked tokens");
    const Node* input = params_.find("train_input");
    const Node::Entry* extra = input && input->is_map() ? input->find_entry("extra_ids") : nullptr;
    if (extra && !model.contains("extra_ids")) {
      diagnostics_.warning(extra->key_mark, extra->value.path(),
                           "the TensorFlow T5 adds train_input.extra_ids sentinels to the "
                           "vocabulary; csrun reads it as model.extra_ids too");
      model.set("extra_ids", extra->value, extra->key_mark);
    }
    default_to(model, "extra_ids", Node::make_int(100), t5 + " adds 100 sentinel ids");
    move_input_vocabulary(model, "vocab_size", "src_vocab_size");
  }

  // Release 1.6's TensorFlow Transformer, as Release 1.9's PyTorch port of it writes it.
  void translate_transformer_model(Node& model) {
    const std::string transformer = "the TensorFlow Transformer";
    rename(model, "hidden_size", "d_model", "hidden_size is the TensorFlow Transformer's d_model");
    rename(model, "filter_size", "d_ff", "filter_size is the TensorFlow Transformer's d_ff");
    check_attention_type(model, "scaled_dot_product", "Transformer");
    for (const char* key : {"attention_dropout_rate", "use_ffn_bias_in_attention"}) {
      drop(model, key, std::string(key) + " is not read by the TensorFlow Transformer");
    }
    for (const char* key : {"dropout_seed", "weight_initialization_seed"}) {
      drop(model, key,
           std::string(key) + " seeds TensorFlow's graph (csrun's seed is runconfig.seed)");
    }
    const Node* width = model.find("d_model");
    const Node* heads = model.find("num_heads");
    if (width && heads && width->is_int() && heads->is_int() && heads->as_int() > 0 &&
        width->as_int() % heads->as_int() == 0) {
      default_to(model, "d_kv", Node::make_int(width->as_int() / heads->as_int()),
                 transformer + " splits d_model evenly across the heads");
    }
    default_to(model, "position_embedding_type", Node::make_string("learned"),
               transformer + " learns its position embeddings by default");
    default_to(model, "mlm_loss_scaling", Node::make_string("precomputed_num_masked"),
               transformer + "'s loss is the mean over the target tokens");
    default_to(model, "layer_norm_epsilon", Node::make_number(1e-8),
               transformer + "'s layer-norm epsilon is 1e-8 by default");
    default_to(model, "norm_type", Node::make_string("layernorm"),
               transformer + " normalizes with a plain layer norm");
    default_to(model, "use_pre_encoder_decoder_layer_norm", Node::make_bool(false),
               transformer + " has no layer norm before its encoder and decoder");
    default_to(model, "use_pre_encoder_decoder_dropout", Node::make_bool(true),
               transformer + " drops out its embeddings");
    default_to(model, "relu_dropout_rate", Node::make_number(0.0),
               transformer + " has no dropout inside its feed-forward layers");
    default_to(model, "use_dropout_outside_residual_path", Node::make_bool(false),
               transformer + " drops out inside the residual path");
    default_to(model, "use_transformer_initialization", Node::make_bool(true),
               transformer + " initializes as Vaswani et al.");
    move_input_vocabulary(model, "src_vocab_size", "src_vocab_size");
    move_input_vocabulary(model, "tgt_vocab_size", "tgt_vocab_size");
  }

  // A vocabulary size the TensorFlow input gives instead of its vocabulary file's line count.
  void move_input_vocabulary(Node& model, const char* input_key, const char* model_key) {
    const Node* input = params_.find("train_input");
    const Node::Entry* size = input && input->is_map() ? input->find_entry(input_key) : nullptr;
    if (!size || model.contains(model_key)) return;
    diagnostics_.warning(size->key_mark, size->value.path(),
                         std::string("the TensorFlow layout gives the vocabulary size in "
                                     "train_input; csrun reads it as model.") +
                             model_key);
    model.set(model_key, size->value, size->key_mark);
  }

  void translate_inputs() {
    Node* train = map_section("train_input");
    if (network_ == Network::unet && train) {
      translate_unet_inputs(*train);
      return;
    }
    for (const char* key : {"train_input", "eval_input"}) {
      Node* input = map_section(key);
      if (!input) continue;
      if (network_ == Network::t5) translate_t5_input(*input);
      if (network_ == Network::transformer) translate_transformer_input(*input);
      rename(*input, "shuffle_buffer_size", "shuffle_buffer",
             "shuffle_buffer_size is the TensorFlow layout's shuffle_buffer");
    }
  }

  void translate_t5_input(Node& input) {
    rename(input, "vocab_file", "src_vocab_file",
           "vocab_file is the TensorFlow T5's src_vocab_file");
    rename(input, "data_dir", "src_data_dir", "data_dir is the TensorFlow T5's src_data_dir");
    rename(input, "do_lower_case", "do_lower", "do_lower_case is the TensorFlow T5's do_lower");
    drop(input, "shuffle_buffer_size",
         "the TensorFlow T5 processor does not read shuffle_buffer_size");
    drop(input, "seed", "the TensorFlow T5 processor does not read seed");
    input.take("vocab_size");  // the model's src_vocab_size now
  }

  void translate_transformer_input(Node& input) {
    drop(input, "num_buckets", "num_buckets (bucketing by length) is a TensorFlow-era input key");
    drop(input, "repeat", "repeat is a TensorFlow-era input key (csrun's loop repeats the data)");
    input.take("src_vocab_size");  // the model's now
    input.take("tgt_vocab_size");
  }

  // The TensorFlow UNet names its dataset instead of a data processor and gives both batch sizes
  // in train_input; without eval_input it evaluates on train_input's data without augmentation.
  void translate_unet_inputs(Node& train) {
    const Node::Entry* dataset = train.find_entry("dataset");
    if (dataset && dataset->value.is_string()) {
      std::string name = dataset->value.as_string();
      bool severstal = name == "SeverstalDataset";
      std::string processor = severstal ? "SeverstalBinaryClassDataProcessor" : name;
      diagnostics_.warning(dataset->key_mark, dataset->value.path(),
                           "the TensorFlow UNet names its dataset; " +
                               (severstal ? "csrun reads it as data_processor " + processor
                                          : name + " has no PyTorch data processor, so csrun "
                                                   "can only run it with --fake_data"));
      SourceMark mark = dataset->key_mark;
      train.set("data_processor",
                Node::make_string(processor, dataset->value.mark(), dataset->value.path()), mark);
      train.take("dataset");
    }
    rename(train, "dataset_path", "data_dir", "dataset_path is the TensorFlow UNet's data_dir");
    rename(train, "shuffle_buffer_size", "shuffle_buffer",
           "shuffle_buffer_size is the TensorFlow layout's shuffle_buffer");
    drop(train, "description", "description is the TensorFlow UNet input's comment");
    drop(train, "only_defective_images",
         "only_defective_images selects DAGM 2007 images in TensorFlow's reader only");
    drop(train, "num_parallel_reads", "num_parallel_reads is tf.data's read parallelism");
    std::optional<Node::Entry> eval_batch;
    if (const Node::Entry* entry = train.find_entry("eval_batch_size")) eval_batch = *entry;
    train.take("eval_batch_size");
    rename(train, "train_batch_size", "batch_size",
           "train_batch_size is the TensorFlow UNet's batch size for training");
    if (map_section("eval_input") || !eval_batch) return;
    Node eval = train;
    eval.set_path("eval_input");
    eval.set("batch_size", eval_batch->value, eval_batch->key_mark);
    eval.set("augment_data", Node::make_bool(false, eval_batch->value.mark()),
             eval_batch->key_mark);
    diagnostics_.warning(eval_batch->key_mark, eval_batch->value.path(),
                         "the TensorFlow UNet evaluates on train_input's data, without "
                         "augmentation, in batches of eval_batch_size; csrun reads it as "
                         "eval_input");
    params_.set("eval_input", std::move(eval), eval_batch->key_mark);
  }

  // The TensorFlow layout's optimizer: Adam when optimizer_type is missing (fc_mnist), TF's
  // epsilon (1e-5 with mixed precision, 1e-8 without) and an AdamW that corrects no bias.
  void translate_optimizer(Node& optimizer) {
    // Read apart (tensorflow_overflow_tolerance): the trainer format has no place for it.
    optimizer.take("overflow_tolerance");
    if (const Node::Entry* factor = optimizer.find_entry("loss_scaling_factor");
        factor && factor->value.is_string() && factor->value.as_string() == "tf_dynamic") {
      diagnostics_.note(factor->key_mark, factor->value.path(),
                        "'tf_dynamic' is TensorFlow's own DynamicLossScale, which a Cerebras "
                        "system replaces with CSDynamicLossScale ('dynamic'); csrun runs that");
      optimizer.set("loss_scaling_factor",
                    Node::make_string("dynamic", factor->value.mark(), factor->value.path()),
                    factor->key_mark);
    }
    if (!optimizer.contains("optimizer_type")) {
      diagnostics_.warning(optimizer.mark(), optimizer.path(),
                           "optimizer_type is not set: the TensorFlow layout's fc_mnist trains "
                           "with Adam; csrun reads the section as Adam");
      optimizer.set("optimizer_type",
                    Node::make_string("Adam", optimizer.mark(),
                                      join_path(optimizer.path(), "optimizer_type")),
                    optimizer.mark());
    }
    const Node* type = optimizer.find("optimizer_type");
    std::string name = type->is_string() ? type->as_string() : "";
    for (char& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name != "adam" && name != "adamw") return;
    const Node* model = params_.find("model");
    const Node* mixed = model && model->is_map() ? model->find("mixed_precision") : nullptr;
    bool half = mixed && mixed->is_bool() && mixed->as_bool();
    if (!optimizer.contains("epsilon") && !optimizer.contains("eps")) {
      diagnostics_.note(optimizer.mark(), optimizer.path(),
                        std::string("the TensorFlow layout's default epsilon is ") +
                            (half ? "1e-5 with" : "1e-8 without") +
                            " mixed precision; csrun sets eps to it");
      optimizer.set("eps",
                    Node::make_number(half ? 1e-5 : 1e-8, optimizer.mark(),
                                      join_path(optimizer.path(), "eps")),
                    optimizer.mark());
    }
    if (name == "adamw" && !optimizer.contains("use_bias_correction") &&
        !optimizer.contains("correct_bias")) {
      diagnostics_.note(optimizer.mark(), optimizer.path(),
                        "the TensorFlow layout's AdamW corrects no bias (use_bias_correction "
                        "defaults to false); csrun sets correct_bias: false");
      optimizer.set(
          "correct_bias",
          Node::make_bool(false, optimizer.mark(), join_path(optimizer.path(), "correct_bias")),
          optimizer.mark());
    }
  }

  Node params_;
  Diagnostics& diagnostics_;
  Network network_;
};

}  // namespace

Node pytorch_layout_of_tensorflow(const Node& params, Diagnostics& diagnostics) {
  return TensorflowTranslator(params, diagnostics).translate();
}

double tensorflow_overflow_tolerance(const Node& written, Diagnostics& diagnostics) {
  constexpr double kDefault = 0.05;
  const Node* optimizer = written.is_map() ? written.find("optimizer") : nullptr;
  const Node* tolerance =
      optimizer && optimizer->is_map() ? optimizer->find("overflow_tolerance") : nullptr;
  if (!tolerance || tolerance->is_null()) return kDefault;
  if (tolerance->is_number() && tolerance->as_number() >= 0) return tolerance->as_number();
  diagnostics.error(tolerance->mark(), tolerance->path(),
                    "overflow_tolerance, the share of overflowing steps above which the loss "
                    "scale halves, must be a number >= 0 (TensorFlow's default: 0.05); found " +
                        tolerance->describe());
  return kDefault;
}

}  // namespace csrun::config
