// The UNet builder: its traced parameters against the closed-form count, what it refuses, and its
// eval metrics on a confusion matrix worked by hand.
#include <catch2/catch.hpp>

#include "graph/reference_evaluator.hpp"
#include "models/model_definitions.hpp"
#include "models/step_trace.hpp"
#include "support/step_fixture.hpp"

using namespace csrun;

namespace {

test::CheckedTrainerModel unet(const std::string& yaml, std::vector<std::int64_t> image_shape,
                               std::int64_t classes = 2) {
  test::CheckedTrainerModel t = test::checked_model(yaml);
  t.model.hints.image_shape = std::move(image_shape);
  t.model.hints.num_classes = classes;
  t.model.parameter_count = t.model.definition->count_parameters(t.model.params, t.model.hints);
  return t;
}

}  // namespace

TEST_CASE("UNet's traced parameters agree with the closed-form count, in 2D and 3D") {
  struct Case {
    const char* yaml;
    std::vector<std::int64_t> image_shape;
    std::int64_t classes;
  };
  for (const Case& c : std::vector<Case>{
           {"{name: unet, encoder_filters: [4, 8, 16], decoder_filters: [8, 4], norm_layer: group, "
            "norm_kwargs: {num_groups: 2}}",
            {16, 16, 3},
            2},
           {"{name: unet, encoder_filters: [4, 8], decoder_filters: [4], enable_bias: true, "
            "residual_blocks: true, initial_conv_filters: 6, convs_per_block: [3x3_conv, "
            "1x1_conv], loss: ssce}",
            {8, 8, 1},
            5},
           {"{name: unet, use_conv3d: true, input_channels: 2, encoder_filters: [4, 4, 8], "
            "decoder_filters: [4, 4], norm_layer: batchnorm3d, downscale_method: strided_conv, "
            "downscale_first_conv: true, downscale_encoder_blocks: [false, true], "
            "downscale_bottleneck: true, loss: ssce_dice}",
            {4, 8, 8},
            3},
           {"{name: unet, encoder_filters: [4, 8], decoder_filters: [4], skip_connect: false, "
            "norm_layer: group_instance, loss: multilabel_bce}",
            {8, 8, 1},
            3}}) {
    INFO(c.yaml);
    test::CheckedTrainerModel t = unet(c.yaml, c.image_shape, c.classes);
    models::TracedStep step = models::trace_step(t.model, 2, t.training_options());
    CHECK(step.parameter_count == t.model.parameter_count);
    // The logits keep the image's spatial shape.
    const graph::TensorType& labels = step.graph.node(*step.graph.find_input("labels")).type;
    CHECK(labels.shape.back() == c.image_shape[t.model.params.has("use_conv3d") ? 2 : 1]);
  }
}

TEST_CASE("UNet refuses depthwise convolutions and needs the image's shape") {
  test::CheckedTrainerModel depthwise = unet(
      "{name: unet, encoder_filters: [4, 8], decoder_filters: [4], convs_per_block: [3x3_dw_conv]}",
      {8, 8, 1});
  try {
    models::trace_step(depthwise.model, 2, depthwise.training_options());
    FAIL("a depthwise convolution traced");
  } catch (const models::UnsupportedModel& error) {
    CHECK(error.key() == "convs_per_block");
  }
  test::CheckedTrainerModel shapeless =
      unet("{name: unet, encoder_filters: [4, 8], decoder_filters: [4]}", {});
  CHECK_THROWS_AS(models::trace_step(shapeless.model, 2, shapeless.training_options()),
                  models::UnsupportedModel);
}

TEST_CASE("UNet's eval metrics come from the confusion matrix, ignored classes out of the means") {
  // Four pixels of one image, three classes; predictions (arg-max) 0, 1, 1, 2 against labels
  // 0, 1, 2, 2: class 0 TP 1; class 1 TP 1, one false positive; class 2 TP 1, one false negative.
  graph::Graph graph;
  graph::Tensor logits =
      graph::constant_values(graph, {5, 0, 0, 0, 0, 5, 5, 0, 0, 0, 0, 5}, {1, 3, 2, 2});
  graph::Tensor labels = graph::constant_values(graph, {0, 1, 2, 2}, {1, 2, 2}, graph::DType::i32);
  auto evaluate = [&](const std::string& model) {
    test::CheckedTrainerModel t = test::checked_model(
        "{name: unet, encoder_filters: [4, 8], decoder_filters: [4], " + model + "}");
    std::vector<nn::Metric> metrics =
        models::segmentation_metrics(t.model.params, "ssce", logits, labels, 3);
    std::map<std::string, std::vector<double>> values;
    for (const nn::Metric& metric : metrics) {
      std::vector<graph::NodeId> fetch = {metric.value.id()};
      values[metric.name] = graph::evaluate_reference(graph, {}, fetch)[0].values;
      // IoU and Dice leave out the classes that neither occur nor are predicted; the per-class
      // accuracy counts a class of no pixels as 0, as TensorFlow's mean_per_class_accuracy.
      bool over_present = metric.name == "eval/mean_iou" || metric.name == "eval/dice_coefficient";
      CHECK(metric.average ==
            (over_present ? nn::MetricAverage::ratio_of_present : nn::MetricAverage::ratio));
    }
    return values;
  };
  auto all = evaluate("eval_metrics: [mIOU, DSC, Acc, MPCA]");
  // [numerators..., denominators...]
  CHECK(all["eval/mean_iou"] == std::vector<double>{1, 1, 1, 1, 2, 2});
  CHECK(all["eval/dice_coefficient"] == std::vector<double>{2, 2, 2, 2, 3, 3});
  CHECK(all["eval/accuracy"] == std::vector<double>{3, 4});
  CHECK(all["eval/mean_per_class_accuracy"] == std::vector<double>{1, 1, 1, 1, 1, 2});
  // Ignoring class 2 (as the Model Zoo's PyTorch UNet from 1.9 on): it leaves the means of IoU
  // and Dice, every pixel still counts (the one labelled 2 predicted 1 is class 1's false
  // positive), and so in the accuracy; the per-class accuracy counts it 0, as TensorFlow's.
  auto ignoring = evaluate("eval_metrics: [mIOU, DSC, Acc, MPCA], eval_ignore_classes: [2]");
  CHECK(ignoring["eval/mean_iou"] == std::vector<double>{1, 1, 1, 2});
  CHECK(ignoring["eval/dice_coefficient"] == std::vector<double>{2, 2, 2, 3});
  CHECK(ignoring["eval/accuracy"] == std::vector<double>{3, 4});
  CHECK(ignoring["eval/mean_per_class_accuracy"] == std::vector<double>{1, 1, 0, 1, 1, 0});
}
