"""CommunicatorBase: the interface of a ChainerMN v7 communicator."""
import abc
import contextlib
import warnings

__all__ = ['CommunicatorBase']


class CommunicatorBase(abc.ABC):
    """ChainerMN's communicator interface (``chainermn.CommunicatorBase``).

    Configuration lives on the instance (ChainerMN keeps it in a dict
    shared by every communicator of the process, which would leak between
    simulated ranks).
    """

    def __init__(self):
        self._configs = {}

    # -- ranks -----------------------------------------------------------
    @property
    @abc.abstractmethod
    def rank(self):
        """Rank of this process in the communicator."""

    @property
    @abc.abstractmethod
    def size(self):
        """Number of processes in the communicator."""

    @property
    @abc.abstractmethod
    def intra_rank(self):
        """Rank within this node."""

    @property
    @abc.abstractmethod
    def intra_size(self):
        """Number of processes on this node."""

    @property
    @abc.abstractmethod
    def inter_rank(self):
        """Index of this node."""

    @property
    @abc.abstractmethod
    def inter_size(self):
        """Number of nodes."""

    # -- configuration ---------------------------------------------------
    def set_config(self, name, value=True, **kwargs):
        """set_config(name, value=True): set a named configuration."""
        raise ValueError('Unknown config: {!r}; known: {}'.format(
            name, sorted(self._configs)))

    def __getattr__(self, name):
        # ChainerMN exposes every config as an attribute (comm.batched_copy).
        configs = self.__dict__.get('_configs')
        if configs is not None and name in configs:
            return configs[name]
        raise AttributeError('{!r} object has no attribute {!r}'.format(
            type(self).__name__, name))

    def __setattr__(self, name, value):
        if self.__dict__.get('_in_config_scope'):
            self._configs[name] = value
        else:
            object.__setattr__(self, name, value)

    @property
    def within_config_scope(self):
        """True inside ``config_scope()``."""
        return bool(self.__dict__.get('_in_config_scope'))

    @contextlib.contextmanager
    def config_scope(self):
        """config_scope(): attributes assigned inside the block are stored
        as configs (ChainerMN's way for subclasses to declare theirs)."""
        self.__dict__['_in_config_scope'] = True
        try:
            yield
        finally:
            self.__dict__['_in_config_scope'] = False

    def get_config(self, name=None):
        """get_config(name=None): a config value, or all as a dict."""
        if name is None:
            return dict(self._configs)
        if name not in self._configs:
            raise ValueError('Unknown config: {!r}; known: {}'.format(
                name, sorted(self._configs)))
        return self._configs[name]

    @abc.abstractmethod
    def split(self, color, key):
        """split(color, key): a communicator of the same kind per color."""

    # -- arrays ----------------------------------------------------------
    @abc.abstractmethod
    def send(self, data, dest, tag):
        """send(data, dest, tag): send an array or a tuple of arrays."""

    @abc.abstractmethod
    def recv(self, source, tag):
        """recv(source, tag): receive what send() sent."""

    @abc.abstractmethod
    def bcast(self, data, max_buf_len=None, root=0):
        """bcast(data, max_buf_len=None, root=0): broadcast an array."""

    @abc.abstractmethod
    def gather(self, data, root=0):
        """gather(data, root=0): every rank's array, as a tuple at root."""

    @abc.abstractmethod
    def allgather(self, x):
        """allgather(x): every rank's array, as a tuple on every rank."""

    @abc.abstractmethod
    def alltoall(self, xs):
        """alltoall(xs): rank i gets xs[i] of every rank."""

    @abc.abstractmethod
    def scatter(self, xs, root=0):
        """scatter(xs, root=0): rank i gets xs[i] from root."""

    @abc.abstractmethod
    def allreduce(self, data):
        """allreduce(data): elementwise sum over the ranks."""

    def finalize(self):
        """finalize(): release resources; do not use the object after."""
        return None

    # -- objects ---------------------------------------------------------
    @abc.abstractmethod
    def send_obj(self, obj, dest, tag=0):
        """send_obj(obj, dest, tag=0): send a picklable object."""

    @abc.abstractmethod
    def recv_obj(self, source, status=None, tag=None):
        """recv_obj(source, status=None, tag=ANY_TAG): receive an object."""

    @abc.abstractmethod
    def bcast_obj(self, obj, max_buf_len=None, root=0):
        """bcast_obj(obj, max_buf_len=None, root=0): broadcast an object."""

    @abc.abstractmethod
    def gather_obj(self, obj, root=0):
        """gather_obj(obj, root=0): list of every rank's object at root."""

    @abc.abstractmethod
    def allreduce_obj(self, obj):
        """allreduce_obj(obj): sum of every rank's object."""

    # -- models ----------------------------------------------------------
    @abc.abstractmethod
    def bcast_data(self, model):
        """bcast_data(model): copy rank 0's parameters to every rank."""

    def broadcast_data(self, model):
        """broadcast_data(model): alias of bcast_data."""
        self.bcast_data(model)

    @abc.abstractmethod
    def multi_node_mean_grad(self, model, zero_fill=False):
        """multi_node_mean_grad(model, zero_fill=False): average grads."""

    def allreduce_grad(self, model, zero_fill=False):
        """allreduce_grad(model, zero_fill=False): deprecated alias."""
        warnings.warn('allreduce_grad() is deprecated; use '
                      'multi_node_mean_grad()', DeprecationWarning,
                      stacklevel=2)
        self.multi_node_mean_grad(model, zero_fill)
