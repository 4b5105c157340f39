"""What a program prints of mpi4py.MPI's own objects: class names, reprs
(addresses masked), exception strings, qualified names, pickles and the
classes help(MPI) lists. Each line is ``OUT rank=R ...``."""
import pickle
import pydoc
import re

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()


def out(*words):
    text = ' '.join(str(w) for w in words)
    print('OUT rank={} {}'.format(rank, re.sub(r'0x[0-9a-f]+', '0x?', text)))


# Every public class, and every predefined handle's type and repr.
for name in sorted(vars(MPI)):
    value = getattr(MPI, name)
    if isinstance(value, type) and not name.startswith('_'):
        out('class', name, value, value.__module__, value.__qualname__)
    elif type(value).__module__ == 'mpi4py.MPI' and not name.startswith('_'):
        out('handle', name, type(value), repr(value))

# Handles made at run time.
dup = comm.Dup()
group = comm.Get_group()
info = MPI.Info.Create()
op = MPI.Op.Create(lambda a, b, t: None)
vector = MPI.INT.Create_vector(2, 1, 2)
status = MPI.Status()
request = comm.isend(rank, dest=rank)
out('made', *(repr(x) for x in (dup, group, info, op, vector, status,
                                request, MPI.buffer(bytearray(4)))))
comm.recv(source=rank, status=status)
request.wait()
out('status', repr(status), str(status))
for obj in (dup, group, info, op, vector):
    obj.Free()

# Exceptions: str, repr and args are mpi4py's alone.
for what, call in (
        ('dest', lambda: comm.send(1, dest=comm.size + 98)),
        ('tag', lambda: comm.Send(np.zeros(1), dest=rank, tag=-7)),
        ('root', lambda: comm.bcast(1, root=comm.size + 5)),
        ('count', lambda: MPI.INT.Create_contiguous(-1)),
        ('info', lambda: MPI.INFO_ENV.Set('k', 'v')),
        ('free', lambda: MPI.COMM_WORLD.Free())):
    try:
        call()
    except MPI.Exception as error:
        out('error', what, type(error), repr(error), str(error), error.args,
            error.Get_error_class(), error.Get_error_string())
        copy = pickle.loads(pickle.dumps(error))
        out('error-copy', what, type(copy), str(copy), copy.args)

# Qualified names of methods, properties' getters aside.
for cls, names in (
        (MPI.Comm, ('Send', 'recv', 'Bcast', 'Allreduce', 'Get_rank', 'Dup',
                    'Split', 'Free', 'Iprobe')),
        (MPI.Intracomm, ('Send', 'Split', 'Create_cart', 'Spawn')),
        (MPI.Intercomm, ('Bcast', 'Merge', 'Get_remote_size')),
        (MPI.Datatype, ('Create_vector', 'Pack', 'Get_size', 'Commit')),
        (MPI.Request, ('Wait', 'Test', 'Waitall', 'wait')),
        (MPI.Status, ('Get_source', 'Get_count')),
        (MPI.Op, ('Create', 'Reduce_local')),
        (MPI.Group, ('Incl', 'Translate_ranks')),
        (MPI.Info, ('Create', 'Get'))):
    out('qualname', cls.__name__,
        *(getattr(cls, name).__qualname__ for name in names))
for function in (MPI.Get_processor_name, MPI.Compute_dims,
                 MPI.Get_error_class, MPI.Wtime, MPI._sizeof):
    out('function', function.__module__, function.__qualname__)

# Predefined objects pickle as mpi4py.MPI's globals, and come back as
# themselves.
for name in ('INT', 'DOUBLE', 'SUM', 'MAX', 'COMM_NULL', 'COMM_WORLD',
             'IN_PLACE', 'REQUEST_NULL', 'GROUP_EMPTY', 'INFO_NULL',
             'ERRORS_RETURN', 'MESSAGE_NULL', 'DATATYPE_NULL'):
    value = getattr(MPI, name)
    data = pickle.dumps(value)
    out('pickle', name, len(data), pickle.loads(data) is value)
for value in (MPI.Datatype(MPI.INT), MPI.Status(), MPI.Exception(6)):
    out('pickle-copy', type(pickle.loads(pickle.dumps(value))))

# help(MPI) lists the classes.
listed = re.findall(r'^    class (\w+)\(', pydoc.render_doc(
    MPI, renderer=pydoc.plaintext), re.M)
out('help', sorted(set(listed) & {'Comm', 'Intracomm', 'Datatype', 'Op',
                                  'Request', 'Status', 'Exception', 'Win'}))
