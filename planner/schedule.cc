// Kahn's algorithm with a min-heap on node position: among ready nodes the earliest in the file
// runs first (DESIGN contract 1), so the order is stable and printable.
#include "planner/schedule.h"

#include <functional>
#include <map>
#include <queue>
#include <set>

namespace onyx::planner {

StatusOr<std::vector<int>> KahnSchedule(const ir::Graph& g) {
  const int n = static_cast<int>(g.nodes.size());
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    std::set<int> deps;
    for (const auto* list : {&g.nodes[i].inputs, &g.nodes[i].implicit_inputs})
      for (const auto& in : *list) {
        auto it = producer.find(in);
        if (it != producer.end() && it->second != i) deps.insert(it->second);
        if (it != producer.end() && it->second == i)
          return InvalidModel(g.nodes[i].Describe(), " reads its own output '", in, "'");
      }
    for (int d : deps) {
      users[d].push_back(i);
      ++indeg[i];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    order.push_back(v);
    for (int u : users[v])
      if (--indeg[u] == 0) ready.push(u);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (indeg[i] > 0)
        return InvalidModel(g.nodes[i].Describe(), " is part of a cycle: the graph is not a DAG");
  }
  return order;
}

}  // namespace onyx::planner
