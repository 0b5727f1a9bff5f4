"""nabla_nn.functional: the functional forms of every layer, activation and loss (PyTorch's
`torch.nn.functional`), written with nabla ops so they differentiate, vmap and compile.

Example:
    >>> import nabla_nn.functional as F
    >>> F.relu(nb.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""

from .activation import *  # noqa: F403
from .attention import *  # noqa: F403
from .conv import *  # noqa: F403
from .ctc import *  # noqa: F403
from .dropout import *  # noqa: F403
from .extra import *  # noqa: F403
from .fold import *  # noqa: F403
from .fractional_pooling import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .loss_margin import *  # noqa: F403
from .normalization import *  # noqa: F403
from .pooling import *  # noqa: F403
from .sparse import *  # noqa: F403
from .upsampling import *  # noqa: F403
from .vision import *  # noqa: F403
