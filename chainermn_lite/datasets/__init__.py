"""Dataset scattering across ranks."""
from chainermn_lite.datasets.empty_dataset import create_empty_dataset
from chainermn_lite.datasets.scatter import DataSizeError
from chainermn_lite.datasets.scatter import scatter_dataset
from chainermn_lite.datasets.scatter import scatter_index
from chainermn_lite.datasets.scatter_check import check_scattered
from chainermn_lite.datasets.scatter_check import ScatterError

__all__ = ['create_empty_dataset', 'DataSizeError', 'scatter_dataset',
           'scatter_index', 'check_scattered', 'ScatterError']
