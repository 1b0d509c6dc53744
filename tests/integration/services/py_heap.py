# py_heap.py: a Python program with a known heap, for test_real_services.
# Builds ~180 MB of strings, dicts and lists while tracemalloc counts them,
# stops tracemalloc (freeing its own tables), prints "traced=N" and
# "ready", then spends CPU in Python code (hot_loop) until it is killed.
import tracemalloc

tracemalloc.start()
data = []
for i in range(300000):
    data.append(("key%d" % i) * 8)
    data.append({"id": i, "vals": list(range(i % 50))})
traced, _ = tracemalloc.get_traced_memory()
tracemalloc.stop()
print("traced=%d" % traced, flush=True)
print("ready", flush=True)


def hot_loop():
    x = 0
    while True:
        x += sum(i * i for i in range(1000))


hot_loop()
