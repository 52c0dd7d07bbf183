#include "processor_registry.hpp"

#include "config/param_types.hpp"

namespace csrun::data {

namespace {

using namespace config;
using T = ValueType;

std::vector<Field> loader_fields() {
  return {
      optional_field("data_processor", T::string()),
      required_field("batch_size", positive_integer()),
      optional_field("micro_batch_size", micro_batch_size_type()),
      default_field("shuffle", T::boolean(), value(true)),
      optional_field("shuffle_seed", T::integer().or_null()),
      optional_field("shuffle_buffer", positive_integer().or_null()),
      default_field("num_workers", non_negative_integer(), value(0)),
      optional_field("prefetch_factor", positive_integer().or_null()),
      optional_field("persistent_workers", T::boolean()),
      optional_field("drop_last", T::boolean()),
      optional_field("drop_last_batch", T::boolean()),
      optional_field("to_float16", T::boolean()),
      optional_field("mixed_precision", T::boolean()),
      optional_field("fp16_type", T::choice({"float16", "bfloat16", "cbfloat16"})),
      no_effect_field("use_multiple_workers",
                      "use_multiple_workers is a Model Zoo 1.x key; it has no effect "
                      "(num_workers decides)"),
  };
}

ProcessorDefinition processor(
    const std::string& name, const std::string& description, std::vector<Field> own,
    std::function<DatasetFacts(const DataloaderSpec&, Diagnostics&)> check_files,
    std::string unreadable_format = {}) {
  std::vector<Field> fields = loader_fields();
  fields.insert(fields.end(), own.begin(), own.end());
  return ProcessorDefinition{name, description,
                             make_schema(name, std::move(fields), UnknownKeys::error_pydantic),
                             std::move(check_files), std::move(unreadable_format)};
}

Field data_dir(bool required) {
  return required ? required_field("data_dir", string_or_strings())
                  : optional_field("data_dir", string_or_strings());
}

std::vector<Field> gpt_fields(bool map_style) {
  std::vector<Field> fields = {
      data_dir(!map_style),
      optional_field("max_sequence_length", positive_integer()),
      optional_field("use_vsl", T::boolean()),
      optional_field("features_list", T::list_of(T::string())),
      optional_field("num_samples", positive_integer().or_null()),
      no_effect_field("vocab_size",
                      "vocab_size is deprecated for GPT HDF5 data (the model's "
                      "vocab_size is used); it has no effect"),
  };
  if (map_style) {
    for (Field field :
         {optional_field("mixture", T::list_of(T::mapping(), 1)),
          optional_field("data_subset", T::string().or_null()),
          optional_field("sort_files", T::boolean()), optional_field("pad_last", T::boolean()),
          optional_field("use_worker_cache", T::boolean()),
          optional_field("dataset_map_fn", T::any()),
          no_effect_field("repeat",
                          "repeat is deprecated (the loop repeats the data); it has no effect"),
          no_effect_field("data_transforms",
                          "data_transforms (for example add_sink_tokens) are not applied by "
                          "csrun's reader yet; it has no effect")}) {
      fields.push_back(std::move(field));
    }
  }
  return fields;
}

std::vector<Field> bert_fields(bool dynamic_mask) {
  std::vector<Field> fields = {
      data_dir(true),
      optional_field("max_sequence_length", positive_integer()),
      optional_field("max_predictions_per_seq", positive_integer()),
      optional_field("disable_nsp", T::boolean()),
      optional_field("gather_mlm_labels", T::boolean()),
      config::no_effect_field("buckets",
                              "buckets (variable tensor shapes) is a Model Zoo 1.x "
                              "pipeline-mode key; it has no effect"),
  };
  if (!dynamic_mask) {
    // 1.9-2.2 configs of the static-mask processor kept the masking keys of the dynamic one,
    // which it never read.
    for (const char* key : {"vocab_file", "vocab_size", "masked_lm_prob", "do_lower",
                            "whole_word_masking", "dynamic_mlm_scale"}) {
      fields.push_back(no_effect_field(
          key, std::string(key) +
                   " has no effect with static masks (the files hold the masked tokens)"));
    }
  }
  if (dynamic_mask) {
    for (Field field :
         {required_field("vocab_file", T::string()),
          optional_field("masked_lm_prob", T::number({0.0, 1.0, false, false})),
          optional_field("do_lower", T::boolean()),
          optional_field("whole_word_masking", T::boolean()),
          optional_field("mask_whole_word", T::boolean()),
          optional_field("dynamic_mlm_scale", T::boolean()),
          optional_field("exclude_from_masking", T::list_of(T::string())),
          optional_field("oov_token", T::string()), optional_field("mask_token", T::string()),
          optional_field("document_separator_token", T::string())}) {
      fields.push_back(std::move(field));
    }
    for (const char* key :
         {"labels_pad_id", "input_pad_id", "attn_mask_pad_id", "segment_pad_id"}) {
      fields.push_back(no_effect_field(
          key, std::string(key) + " has no effect: csrun's reader pads with 0, the Model Zoo's "
                                  "default"));
    }
    for (const char* key : {"vocab_size", "num_examples", "steps"}) {
      fields.push_back(no_effect_field(
          key, std::string(key) + " is deprecated for BERT CSV data (the files and the model "
                                  "decide); it has no effect"));
    }
  } else {
    fields.push_back(no_effect_field(
        "max_position_embeddings",
        "max_position_embeddings has no effect on static-mask data (the model's decides)"));
  }
  return fields;
}

std::vector<Field> tfrecord_fields() {
  std::vector<Field> fields = bert_fields(true);
  fields.push_back(config::no_effect_field(
      "steps", "steps is a TensorFlow-era input key; it has no effect (runconfig sets the steps)"));
  return fields;
}

std::vector<Field> seq2seq_fields(bool separate_target) {
  std::vector<Field> fields = {
      required_field("src_vocab_file", T::string()),
      required_field("src_data_dir", T::string()),
      optional_field("extra_ids", non_negative_integer()),
      optional_field("src_max_sequence_length", positive_integer()),
      optional_field("tgt_max_sequence_length", positive_integer()),
      optional_field("do_lower", T::boolean()),
      optional_field("dynamic_loss_weight", T::boolean()),
      config::no_effect_field("buckets",
                              "buckets (variable tensor shapes) is a Model Zoo 1.x "
                              "pipeline-mode key; it has no effect"),
  };
  if (separate_target) {
    for (const char* key : {"tgt_vocab_file", "tgt_data_dir"}) {
      fields.push_back(no_effect_field(
          key, std::string(key) +
                   " has no effect: the Transformer's processor reads both sides with "
                   "src_vocab_file, from the files src_data_dir/meta.dat lists"));
    }
  } else {
    for (const char* key : {"tgt_vocab_file", "tgt_data_dir"}) {
      fields.push_back(no_effect_field(
          key, std::string(key) + " is deprecated for T5 (source and target share the "
                                  "vocabulary and the data); it has no effect"));
    }
  }
  fields.push_back(no_effect_field("vocab_size",
                                   "vocab_size is deprecated here (the model's src_vocab_size and "
                                   "tgt_vocab_size decide); it has no effect"));
  // 2.4 on: packing and the special tokens of the vocabulary.
  for (Field field :
       {no_effect_field("pack_sequences",
                        "pack_sequences has no effect: csrun reads one piece of a document or "
                        "one sentence pair per sample, unpacked"),
        no_effect_field("num_documents_to_concatenate",
                        "num_documents_to_concatenate has no effect: csrun does not pack "
                        "documents"),
        optional_field("oov_token", T::string()), optional_field("sos_token", T::string()),
        optional_field("eos_token", T::string()), optional_field("pad_token", T::string()),
        optional_field("labels_pad_id", T::integer()),
        optional_field("input_pad_id", T::integer())}) {
    fields.push_back(std::move(field));
  }
  return fields;
}

// The pad ids of the fine-tuning processors: csrun's readers pad with the Model Zoo's defaults.
std::vector<Field> pad_id_fields(std::initializer_list<const char*> keys) {
  std::vector<Field> fields;
  for (const char* key : keys) {
    fields.push_back(no_effect_field(
        key, std::string(key) + " has no effect: csrun pads as the Model Zoo does by default"));
  }
  return fields;
}

// The sentence-classification processors of SST-2 and MNLI (CSV/TSV files of the GLUE tasks).
std::vector<Field> glue_fields() {
  std::vector<Field> fields = {data_dir(true), optional_field("is_training", T::boolean()),
                               optional_field("vocab_file", T::string()),
                               optional_field("do_lower", T::boolean()),
                               optional_field("max_sequence_length", positive_integer())};
  for (Field& field : pad_id_fields({"labels_pad_id", "input_pad_id", "attn_mask_pad_id"}))
    fields.push_back(std::move(field));
  return fields;
}

std::vector<Field> token_classifier_fields() {
  std::vector<Field> fields = {data_dir(true),
                               optional_field("vocab_file", T::string()),
                               optional_field("label_vocab_file", T::string()),
                               optional_field("max_sequence_length", positive_integer()),
                               optional_field("mask_whole_word", T::boolean()),
                               optional_field("do_lower", T::boolean()),
                               optional_field("include_padding_in_loss", T::boolean())};
  for (Field& field : pad_id_fields({"labels_pad_id", "input_pad_id", "attn_mask_pad_id"}))
    fields.push_back(std::move(field));
  return fields;
}

std::vector<Field> summarization_fields() {
  return {data_dir(true),
          optional_field("vocab_file", T::string()),
          optional_field("max_sequence_length", positive_integer()),
          optional_field("max_cls_tokens", positive_integer()),
          optional_field("mask_whole_word", T::boolean()),
          optional_field("do_lower", T::boolean()),
          no_effect_field("pad_id",
                          "pad_id has no effect: csrun pads with 0, the Model Zoo's "
                          "default")};
}

std::vector<Field> image_fields() {
  return {
      data_dir(true),
      optional_field("image_shape", T::list_of(positive_integer(), 3, 3)),
      optional_field("normalize_data_method",
                     T::choice({"zero_centered", "zero_one", "standard_score"}).or_null()),
      optional_field("augment_data", T::boolean()),
      optional_field("train_test_split", T::number({0.0, 1.0, true, true})),
      optional_field("num_classes", positive_integer()),
      optional_field("class_id", non_negative_integer()),
      optional_field("use_fast_dataloader", T::boolean()),
      optional_field("use_worker_cache", T::boolean()),
      optional_field("duplicate_act_worker_data", T::boolean()),
      // SKM-TEA volumes: which echo, and whether the cartilage classes are merged.
      optional_field("echo_type",
                     T::choice({"echo1", "echo2", "echo1-echo2-mc", "root_sum_of_squares"})),
      optional_field("aggregate_cartilage", T::boolean()),
  };
}

}  // namespace

const std::vector<ProcessorDefinition>& processor_registry() {
  static const std::vector<ProcessorDefinition> registry = {
      processor("MNISTDataProcessor", "MNIST-style digits in IDX files (28x28, labels 0-9)",
                {default_field("data_dir", T::string(), value("./")),
                 optional_field("split", T::choice({"train", "val", "test"})),
                 default_field("use_fake_data", T::boolean(), value(false)),
                 optional_field("fake_data_seed", T::integer()),
                 config::no_effect_field("num_parallel_calls",
                                         "num_parallel_calls is a TensorFlow-era input key "
                                         "(tf.data's map parallelism); it has no effect "
                                         "(num_workers decides)")},
                check_mnist_files),
      processor("GptHDF5DataProcessor",
                "token sequences in HDF5 files: dataset 'data', int32 [n, 3, msl]",
                gpt_fields(false), check_gpt_hdf5_files),
      processor("GptHDF5MapDataProcessor",
                "token sequences in HDF5 files (map-style, resumable): dataset 'data'",
                gpt_fields(true), check_gpt_hdf5_files),
      processor("BertCSVDynamicMaskDataProcessor",
                "BERT pre-training CSV files listed in meta.dat, masked on the fly",
                bert_fields(true), check_bert_csv_files),
      processor("BertCSVDataProcessor", "BERT pre-training CSV files with static masks",
                bert_fields(false), check_bert_csv_files),
      processor("BertHDF5DataProcessor", "BERT pre-training HDF5 files", bert_fields(false), {},
                "BERT HDF5 files"),
      processor("BertMlmOnlyTfRecordsDynamicMaskProcessor",
                "TensorFlow records for masked-LM pre-training", tfrecord_fields(), {},
                "TensorFlow record files"),
      processor("BertMlmOnlyTfRecordsStaticMaskProcessor",
                "TensorFlow records for masked-LM pre-training", tfrecord_fields(), {},
                "TensorFlow record files"),
      processor("T5DynamicDataProcessor", "tokenized text for T5 span corruption",
                seq2seq_fields(false), check_seq2seq_text_files),
      processor("T5HDF5DataProcessor", "T5 pre-training HDF5 files", {data_dir(true)}, {},
                "T5 HDF5 files"),
      processor("TransformerDynamicDataProcessor", "tokenized parallel text for translation",
                seq2seq_fields(true), check_seq2seq_text_files),
      processor("SeverstalBinaryClassDataProcessor", "Severstal steel-defect images and masks",
                image_fields(), {}, "Severstal images"),
      processor("InriaAerialDataProcessor", "Inria aerial images and masks", image_fields(), {},
                "Inria aerial images"),
      processor(
          "Hdf5DataProcessor",
          "segmentation images and masks in HDF5 files (the Model Zoo UNet's layout: "
          "groups example_<i> with image [C, H, W] and label)",
          {data_dir(true), optional_field("image_shape", T::list_of(positive_integer(), 3, 3)),
           optional_field("normalize_data_method",
                          T::choice({"zero_centered", "zero_one", "standard_score"}).or_null()),
           optional_field("augment_data", T::boolean()),
           optional_field("num_classes", positive_integer()),
           no_effect_field("loss",
                           "the labels' layout follows the model's loss; loss in the "
                           "dataloader has no effect"),
           no_effect_field("use_worker_cache",
                           "use_worker_cache copies the data to the appliance's workers; "
                           "it has no effect")},
          check_segmentation_hdf5_files),
      processor("SkmDataProcessor", "SKM-TEA MRI volumes", image_fields(), {}, "SKM-TEA volumes"),
      processor(
          "CityscapesDataProcessor", "Cityscapes street scenes and their label maps",
          [] {
            std::vector<Field> fields = image_fields();
            fields.push_back(
                optional_field("max_image_shape", T::list_of(positive_integer(), 2, 2)));
            return fields;
          }(),
          {}, "Cityscapes images"),
      processor("SST2DataProcessor", "SST-2 sentences and their sentiment (GLUE, TSV files)",
                glue_fields(), check_glue_files),
      processor("MNLIDataProcessor", "MNLI sentence pairs and their entailment (GLUE, TSV files)",
                glue_fields(), check_glue_files),
      processor("BertTokenClassifierDataProcessor",
                "token-classification (NER) CSV files with a label vocabulary",
                token_classifier_fields(), check_ner_files),
      processor("BertSumCSVDataProcessor",
                "extractive-summarization CSV files (sentences with their CLS positions)",
                summarization_fields(), check_bertsum_files),
      processor(
          "BertTfRecordsProcessor", "TensorFlow records for BERT pre-training (MLM and NSP)",
          [] {
            std::vector<Field> fields = {
                data_dir(true), optional_field("vocab_file", T::string()),
                optional_field("max_sequence_length", positive_integer()),
                optional_field("max_predictions_per_seq", positive_integer())};
            fields.push_back(
                config::no_effect_field("buckets",
                                        "buckets (variable tensor shapes) is a Model Zoo 1.x "
                                        "pipeline-mode key; it has no effect"));
            return fields;
          }(),
          {}, "TensorFlow record files"),
      processor("GptTfRecordsProcessor", "TensorFlow records of token sequences for GPT models",
                {data_dir(true), optional_field("max_sequence_length", positive_integer()),
                 no_effect_field("vocab_size",
                                 "vocab_size is read as the model's vocabulary size in the "
                                 "TensorFlow layout; in the input it has no effect"),
                 no_effect_field("repeat",
                                 "repeat is a TensorFlow-era input key (the loop repeats the "
                                 "data); it has no effect")},
                {}, "TensorFlow record files"),
  };
  return registry;
}

const ProcessorDefinition& unknown_processor() {
  static const ProcessorDefinition definition{
      "unknown",
      "a data processor csrun does not know",
      make_schema("dataloader", loader_fields(), UnknownKeys::unchecked),
      {},
      "its data"};
  return definition;
}

const ProcessorDefinition* find_processor(std::string_view name) {
  for (const ProcessorDefinition& definition : processor_registry()) {
    if (definition.name == name) return &definition;
  }
  return nullptr;
}

std::vector<std::string> processor_names() {
  std::vector<std::string> names;
  for (const ProcessorDefinition& definition : processor_registry())
    names.push_back(definition.name);
  return names;
}

}  // namespace csrun::data
