"""A stacked RNN link whose hidden states come from / go to other ranks."""
import chainer
from chainer.links.rnn import n_step_rnn as _rnn

from chainermn_lite.functions import point_to_point
from chainermn_lite.functions.pseudo_connect import pseudo_connect

__all__ = ['create_multi_node_n_step_rnn', 'MultiNodeNStepRNN']


class MultiNodeNStepRNN(chainer.Chain):
    """An NStep RNN link between ranks; see create_multi_node_n_step_rnn.

    Cell state i (``hx``, and ``cx`` for LSTMs) travels on tag i. Receives
    and sends are each chained, so backward replays them in reverse order.
    """

    def __init__(self, link, communicator, rank_in, rank_out):
        if not isinstance(link, _rnn.NStepRNNBase):
            raise ValueError('create_multi_node_n_step_rnn: link must be a '
                             'Chainer NStep RNN link (NStepLSTM, NStepGRU, '
                             '...), got {}'.format(type(link).__name__))
        super().__init__()
        with self.init_scope():
            self.actual_rnn = link
        self.communicator = communicator
        self.rank_in = rank_in
        self.rank_out = rank_out
        self.n_cells = link.n_cells

    def forward(self, *inputs):
        """forward(*inputs): ``actual_rnn(*cells, *inputs)`` followed by the
        delegate variable (None when ``rank_out`` is None)."""
        comm = self.communicator
        cells = [None] * self.n_cells
        if self.rank_in is not None:
            previous = None
            for i in range(self.n_cells):
                previous = point_to_point.recv(
                    comm, self.rank_in, delegate_variable=previous, tag=i)
                cells[i] = previous
        outputs = self.actual_rnn(*(tuple(cells) + inputs))
        delegate = None
        if self.rank_out is not None:
            for i, cell in enumerate(outputs[:self.n_cells]):
                if delegate is not None:
                    cell = pseudo_connect(delegate, cell)
                delegate = point_to_point.send(cell, comm, self.rank_out,
                                               tag=i)
        return tuple(outputs) + (delegate,)


def create_multi_node_n_step_rnn(actual_link, communicator, rank_in=None,
                                 rank_out=None):
    """create_multi_node_n_step_rnn(actual_link, communicator, rank_in=None,
    rank_out=None): a link running ``actual_link`` with its initial hidden
    states received from ``rank_in`` and its final ones sent to ``rank_out``.

    Calling it returns the RNN's outputs plus a trailing delegate variable;
    when ``rank_out`` is set, back-propagate from (or ``pseudo_connect``) it.
    """
    return MultiNodeNStepRNN(actual_link, communicator, rank_in, rank_out)
