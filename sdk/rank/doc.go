// Package rank scores feasible nodes for a placement, as Nomad's scheduler
// does: each scorer yields a value, in [-1, 1] but for an even spread's
// boost of its least-used value (unbounded, as Nomad's), or none, and a
// node's final score is the mean of the values it got.
//
// The scorers are:
//
//   - Fit: bin packing ("binpack": fuller nodes score higher) or spreading
//     ("spread": emptier nodes score higher) over CPU and memory, per the
//     cluster's scheduler configuration;
//   - JobAntiAffinity: a penalty for each allocation of the same job and
//     group already on the node;
//   - ReschedulePenalty: -1 on nodes a rescheduled allocation failed on;
//   - Affinities: the weighted share of a job's affinities a node matches;
//   - Spread: how far a node's attribute value is below its target share
//     (spread blocks with targets and percentages, or an even spread).
//
// Scores collects the values a node got, for AllocMetric.ScoreMetaData.
// Every scorer is O(1) or O(spread attributes) per node: counts are kept
// incrementally as the plan grows, never recomputed from the plan.
package rank
