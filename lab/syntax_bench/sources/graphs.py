"""Graph routines over adjacency dictionaries: search, shortest paths, ordering."""
import heapq
from collections import deque


def add_edge(graph, source, target, weight=1):
    graph.setdefault(source, {})[target] = weight
    graph.setdefault(target, {})


def breadth_first(graph, start):
    seen = {start}
    order = []
    queue = deque([start])
    while queue:
        node = queue.popleft()
        order.append(node)
        for neighbour in sorted(graph.get(node, {})):
            if neighbour not in seen:
                seen.add(neighbour)
                queue.append(neighbour)
    return order


def depth_first(graph, start, seen=None):
    if seen is None:
        seen = set()
    seen.add(start)
    order = [start]
    for neighbour in sorted(graph.get(start, {})):
        if neighbour not in seen:
            order.extend(depth_first(graph, neighbour, seen))
    return order


def shortest_path(graph, source, target):
    distances = {source: 0}
    previous = {}
    heap = [(0, source)]
    while heap:
        distance, node = heapq.heappop(heap)
        if node == target:
            break
        if distance > distances.get(node, float("inf")):
            continue
        for neighbour, weight in graph.get(node, {}).items():
            candidate = distance + weight
            if candidate < distances.get(neighbour, float("inf")):
                distances[neighbour] = candidate
                previous[neighbour] = node
                heapq.heappush(heap, (candidate, neighbour))
    if target not in distances:
        return None, []
    path = [target]
    while path[-1] != source:
        path.append(previous[path[-1]])
    return distances[target], path[::-1]


def topological_order(graph):
    indegree = {node: 0 for node in graph}
    for edges in graph.values():
        for target in edges:
            indegree[target] = indegree.get(target, 0) + 1
    ready = sorted(node for node, degree in indegree.items() if degree == 0)
    order = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for target in sorted(graph.get(node, {})):
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)
    if len(order) != len(indegree):
        raise ValueError("graph has a cycle")
    return order


def connected_components(graph):
    undirected = {}
    for source, edges in graph.items():
        for target in edges:
            undirected.setdefault(source, set()).add(target)
            undirected.setdefault(target, set()).add(source)
        undirected.setdefault(source, set())
    components = []
    seen = set()
    for node in sorted(undirected):
        if node in seen:
            continue
        component = breadth_first({k: dict.fromkeys(v) for k, v in undirected.items()}, node)
        seen.update(component)
        components.append(sorted(component))
    return components


def has_cycle(graph):
    state = {}

    def visit(node):
        state[node] = "active"
        for target in graph.get(node, {}):
            if state.get(target) == "active":
                return True
            if target not in state and visit(target):
                return True
        state[node] = "done"
        return False

    for node in graph:
        if node not in state and visit(node):
            return True
    return False


def degree_table(graph):
    rows = []
    for node in sorted(graph):
        out_degree = len(graph[node])
        in_degree = sum(1 for edges in graph.values() if node in edges)
        rows.append((node, in_degree, out_degree))
    return rows


def minimum_spanning_weight(nodes, edges):
    parent = {node: node for node in nodes}

    def find(node):
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    total = 0
    for weight, left, right in sorted(edges):
        root_left, root_right = find(left), find(right)
        if root_left != root_right:
            parent[root_left] = root_right
            total += weight
    return total
