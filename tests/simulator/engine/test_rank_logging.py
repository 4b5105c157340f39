"""simulator.engine.rank_logging: each rank configures its own loggers,
as each process does under mpiexec."""
import io
import logging

import pytest

_NAME = 'simulator_test_rank_logging'


@pytest.mark.mpi(sizes=(1, 3))
def test_levels_handlers_and_formats_set_by_a_rank_stay_its_own(mpi_comm):
    rank = mpi_comm.rank
    logger = logging.getLogger(_NAME)
    child = logging.getLogger(_NAME + '.child')
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter(
        'rank{} %(levelname)s %(message)s'.format(rank)))
    try:
        logger.setLevel(logging.INFO if rank == 0 else logging.WARNING)
        logger.addHandler(handler)
        logger.propagate = False
        if rank == 2:
            logging.disable(logging.WARNING)
        mpi_comm.Barrier()      # every rank has configured its own
        handlers = list(logger.handlers)
        child.info('info')      # through the parent's level and handler
        child.warning('warning')
        mpi_comm.Barrier()
    finally:
        logging.disable(logging.NOTSET)
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
    assert handlers == [handler]
    expected = {0: 'rank0 INFO info\nrank0 WARNING warning\n',
                1: 'rank1 WARNING warning\n', 2: ''}[rank]
    assert out.getvalue() == expected
    assert child.parent is logger


@pytest.mark.simulator_only('checks that the process keeps its own '
                            'configuration while ranks change theirs')
def test_the_process_configuration_is_the_ranks_start_and_stays():
    import simulator
    logger = logging.getLogger(_NAME + '.process')
    logger.setLevel(logging.ERROR)

    def body(comm):
        start = logger.level
        logger.setLevel(logging.DEBUG + comm.rank)
        logger.addHandler(logging.NullHandler())
        comm.Barrier()
        return start, logger.level, len(logger.handlers)
    try:
        assert simulator.run(body, 2) == [(logging.ERROR, logging.DEBUG, 1),
                                          (logging.ERROR, logging.DEBUG + 1,
                                           1)]
        assert logger.level == logging.ERROR and logger.handlers == []
    finally:
        logger.setLevel(logging.NOTSET)


@pytest.mark.mpi(sizes=(2,))
def test_dict_config_and_shutdown_close_only_the_ranks_own_handlers(
        mpi_comm, tmp_path):
    # Each process's dictConfig closes the handlers it had (none of the
    # other ranks'), and so does its logging.shutdown().
    import logging.config
    rank = mpi_comm.rank
    name = _NAME + '.dict_config'
    paths = [tmp_path / 'rank{}.log'.format(r) for r in range(2)]
    logger = logging.getLogger(name)
    try:
        logging.config.dictConfig({
            'version': 1, 'disable_existing_loggers': False,
            'handlers': {'file': {'class': 'logging.FileHandler',
                                  'filename': str(paths[rank]),
                                  'mode': 'w'}},
            'loggers': {name: {'level': 'INFO', 'handlers': ['file'],
                               'propagate': False}}})
        mpi_comm.Barrier()      # the later rank's dictConfig ran last
        logger.info('from rank %d', rank)
        if rank == 0:
            logging.shutdown()
        mpi_comm.Barrier()
        if rank == 1:
            logger.info('again from rank %d', rank)
            logging.shutdown()
        mpi_comm.Barrier()
        written = paths[rank].read_text()
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
    assert written == {0: 'from rank 0\n',
                       1: 'from rank 1\nagain from rank 1\n'}[rank]
