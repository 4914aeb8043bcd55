// Reference NonMaxSuppression: greedy selection per batch and class by descending score.
#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/reference/image_signal.h"

namespace onyx::kernels::reference {
namespace {

struct Box {
  double x_min, y_min, x_max, y_max;
};

// center_point_box 0: [y1, x1, y2, x2] with either corner order; 1: [x_center, y_center, w, h].
Box ReadBox(const Tensor& boxes, int64_t offset, bool center_point_box) {
  double v[4];
  for (int i = 0; i < 4; ++i) v[i] = LoadAsDouble(boxes.dtype(), boxes.raw_data(), offset + i);
  if (center_point_box) {
    return {v[0] - v[2] / 2, v[1] - v[3] / 2, v[0] + v[2] / 2, v[1] + v[3] / 2};
  }
  return {std::min(v[1], v[3]), std::min(v[0], v[2]), std::max(v[1], v[3]), std::max(v[0], v[2])};
}

// True when the boxes overlap with IoU above the threshold.
bool Suppresses(const Box& a, const Box& b, double iou_threshold) {
  const double ix_min = std::max(a.x_min, b.x_min), ix_max = std::min(a.x_max, b.x_max);
  const double iy_min = std::max(a.y_min, b.y_min), iy_max = std::min(a.y_max, b.y_max);
  if (ix_max <= ix_min || iy_max <= iy_min) return false;
  const double inter = (ix_max - ix_min) * (iy_max - iy_min);
  const double area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  const double area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  const double uni = area_a + area_b - inter;
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

}  // namespace

std::vector<int64_t> NonMaxSuppression(const Tensor& boxes, const Tensor& scores,
                                       int64_t max_output_boxes_per_class, double iou_threshold,
                                       bool has_score_threshold, double score_threshold,
                                       bool center_point_box) {
  std::vector<int64_t> selected;
  // Empty scores: the other dims are bounded by nothing ([0, 1, 2^40] or [2^31, 2^31, 0]).
  if (max_output_boxes_per_class <= 0 || scores.numel() == 0) return selected;
  const int64_t B = scores.dim(0), C = scores.dim(1), N = scores.dim(2);
  std::vector<Box> batch_boxes(static_cast<size_t>(N));
  std::vector<int64_t> order;
  std::vector<double> score(static_cast<size_t>(N));
  std::vector<int64_t> kept;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < N; ++i)
      batch_boxes[i] = ReadBox(boxes, (b * N + i) * 4, center_point_box);
    for (int64_t c = 0; c < C; ++c) {
      order.clear();
      for (int64_t i = 0; i < N; ++i) {
        score[i] = LoadAsDouble(scores.dtype(), scores.raw_data(), (b * C + c) * N + i);
        if (!has_score_threshold || score[i] > score_threshold) order.push_back(i);
      }
      // Highest score first; equal scores keep the lower box index first.
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t l, int64_t r) { return score[l] > score[r]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_output_boxes_per_class) break;
        bool keep = true;
        for (int64_t j : kept) {
          if (Suppresses(batch_boxes[i], batch_boxes[j], iou_threshold)) {
            keep = false;
            break;
          }
        }
        if (!keep) continue;
        kept.push_back(i);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  return selected;
}

}  // namespace onyx::kernels::reference
