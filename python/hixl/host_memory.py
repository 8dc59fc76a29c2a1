"""[hixl extension] Host memory that peers on this host copy with memcpy.

hixl's shm transport maps a peer's registered region into the copying
process when the region lives in a memfd sealed against shrinking (a file
that could shrink under the mapping would crash the copy), and copies with
memcpy; other memory is reached through process_vm_writev/readv, which pin
the pages one by one (about half as fast). docs/architecture.md ("Mapped
regions") has the rules: at least 1 MiB, mapped read-write and shared.
"""

import fcntl
import mmap
import os
import warnings

__all__ = ["shared_host_buffer"]


def shared_host_buffer(nbytes: int) -> mmap.mmap:
    """A zeroed, writable buffer of `nbytes` bytes in a sealed memfd.

    Register it (``register_buffer``) like any buffer; view it with
    ``numpy.frombuffer`` or ``torch.frombuffer``. Its size is fixed (sealed
    and exported buffers refuse ``resize``). Where the kernel cannot make a
    sealed memfd, anonymous memory instead, with a ``RuntimeWarning``.
    """
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes <= 0:
        raise ValueError(f"shared_host_buffer: nbytes must be a positive int, not {nbytes!r}")
    prot = mmap.PROT_READ | mmap.PROT_WRITE
    try:
        fd = os.memfd_create("hixl-host", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError) as e:
        return _anonymous(nbytes, prot, f"memfd_create: {e}")
    try:
        os.ftruncate(fd, nbytes)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        # mmap keeps a duplicate of the fd while it lives: hixl finds the
        # file through it when the buffer is registered.
        return mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED, prot=prot)
    except (AttributeError, OSError) as e:
        return _anonymous(nbytes, prot, f"sealing the memfd: {e}")
    finally:
        os.close(fd)


def _anonymous(nbytes, prot, why):
    warnings.warn(
        f"shared_host_buffer: no sealed memfd ({why}): anonymous memory instead, which peers on this host "
        "reach with process_vm_writev only",
        RuntimeWarning,
        stacklevel=3,
    )
    return mmap.mmap(-1, nbytes, prot=prot)
