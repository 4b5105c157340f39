"""mpi4py.futures' pool over simulated ranks: with ``-m mpi4py.futures``
the other ranks serve rank 0's tasks, otherwise it spawns its workers.
Tasks are this script's functions and results its class's objects: each
worker runs the script as its own ``__main__`` (mpi4py.futures swaps it
in through runpy), as each worker process does."""
from mpi4py.futures import MPIPoolExecutor


class Box:
    def __init__(self, value):
        self.value = value


def square(x):
    return Box(x * x)


if __name__ == '__main__':
    with MPIPoolExecutor(2) as executor:
        boxes = list(executor.map(square, range(8)))
    print('OUT squares={} class={}'.format(
        [b.value for b in boxes], type(boxes[0]).__module__))
