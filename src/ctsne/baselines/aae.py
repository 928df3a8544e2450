"""AAE baseline: an auto-encoder censored by an adversary, then t-SNE on its code.

The configuration of Edwards and Storkey (2015, "Censoring representations with an
adversary"), as used by the ct-SNE paper (App. C): an encoder maps ``x`` to a code ``z``,
a decoder reconstructs ``x`` from ``z``, and an adversary tries to predict the known
label from ``z``. The adversary minimises its cross-entropy ``D``; the encoder and decoder
minimise ``α·C − β·D`` (``C`` the mean squared reconstruction error), i.e. they keep
what is needed to rebuild ``x`` while making the label unpredictable. The two are
updated in alternation, one mini-batch each. t-SNE then embeds the codes.

Eight hyper-parameters, as the paper counts them: four for the networks (code size and
the hidden widths of encoder, decoder and adversary), two loss weights (α, β) and two
learning rates. Requires the optional dependency torch (``pip install ctsne[torch]``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["AdversarialCensor", "aae_tsne"]


def _import_torch():
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            "the AAE baseline needs PyTorch, an optional dependency of ctsne: "
            "pip install 'ctsne[torch]' (or pip install torch)"
        ) from exc
    return torch


def _joint_codes(labels) -> tuple[np.ndarray, int]:
    labels = np.asarray(labels)
    if labels.ndim == 1:
        labels = labels[:, None]
    if labels.ndim != 2:
        raise ValueError(f"labels must be (n,) or (n, m), got shape {labels.shape}")
    # One adversary head over the joint classes: censoring each column separately would
    # leave their combination (the paper's f₁₋₆) predictable.
    _, codes = np.unique(labels.astype(str), axis=0, return_inverse=True)
    codes = codes.ravel()
    return codes, int(codes.max()) + 1


class AdversarialCensor:
    """Auto-encoder whose code is censored of known labels by an adversary.

    Parameters
    ----------
    latent_dim : int
        Size of the code ``z``.
    encoder_hidden, decoder_hidden, adversary_hidden : int
        Width of the single hidden (ReLU) layer of each network.
    reconstruction_weight : float
        α, the weight of the reconstruction error.
    adversary_weight : float
        β, the weight of the adversary's cross-entropy (subtracted).
    learning_rate, adversary_learning_rate : float
        Adam step sizes of the auto-encoder and of the adversary.
    n_epochs : int
        Passes over the data.
    batch_size : int
    random_state : int, optional
        Seeds torch and the mini-batch order.

    Attributes
    ----------
    history_ : list of dict
        Per epoch: mean ``reconstruction`` error, ``adversary`` cross-entropy and
        ``adversary_accuracy`` on the training batches.
    n_classes_ : int
    """

    def __init__(
        self,
        latent_dim: int = 8,
        encoder_hidden: int = 64,
        decoder_hidden: int = 64,
        adversary_hidden: int = 64,
        reconstruction_weight: float = 1.0,
        adversary_weight: float = 1.0,
        learning_rate: float = 1e-3,
        adversary_learning_rate: float = 1e-3,
        n_epochs: int = 200,
        batch_size: int = 128,
        random_state: int | None = None,
    ) -> None:
        self.latent_dim = latent_dim
        self.encoder_hidden = encoder_hidden
        self.decoder_hidden = decoder_hidden
        self.adversary_hidden = adversary_hidden
        self.reconstruction_weight = reconstruction_weight
        self.adversary_weight = adversary_weight
        self.learning_rate = learning_rate
        self.adversary_learning_rate = adversary_learning_rate
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.random_state = random_state

    def _networks(self, torch, d: int, n_classes: int):
        nn = torch.nn
        enc = nn.Sequential(nn.Linear(d, self.encoder_hidden), nn.ReLU(),
                            nn.Linear(self.encoder_hidden, self.latent_dim))
        dec = nn.Sequential(nn.Linear(self.latent_dim, self.decoder_hidden), nn.ReLU(),
                            nn.Linear(self.decoder_hidden, d))
        adv = nn.Sequential(nn.Linear(self.latent_dim, self.adversary_hidden), nn.ReLU(),
                            nn.Linear(self.adversary_hidden, n_classes))
        return enc, dec, adv

    def fit(self, X: np.ndarray, labels) -> AdversarialCensor:
        """Train the encoder, decoder and adversary on ``X`` and the labels to censor."""
        torch = _import_torch()
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
        codes, n_classes = _joint_codes(labels)
        if len(codes) != len(X):
            raise ValueError(f"labels has {len(codes)} rows but X has {len(X)}")
        self.n_classes_ = n_classes
        # Standardise so that one learning rate suits every feature's scale.
        self.mean_ = X.mean(axis=0)
        self.scale_ = X.std(axis=0)
        self.scale_[self.scale_ == 0] = 1.0

        gen = torch.Generator().manual_seed(
            int(np.random.default_rng(self.random_state).integers(2**31)))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(2**31, (1,), generator=gen)))
            enc, dec, adv = self._networks(torch, X.shape[1], n_classes)
        xt = torch.as_tensor((X - self.mean_) / self.scale_, dtype=torch.float32)
        st = torch.as_tensor(codes, dtype=torch.long)
        self.history_ = []
        # The networks are tiny: thread start-up costs more than it saves.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            self._train(torch, xt, st, enc, dec, adv, gen)
        finally:
            torch.set_num_threads(threads)
        self._encoder = enc.eval()
        self._decoder = dec.eval()
        return self

    def _train(self, torch, xt, st, enc, dec, adv, gen) -> None:
        opt_ae = torch.optim.Adam([*enc.parameters(), *dec.parameters()],
                                  lr=self.learning_rate)
        opt_adv = torch.optim.Adam(adv.parameters(), lr=self.adversary_learning_rate)
        ce = torch.nn.functional.cross_entropy
        mse = torch.nn.functional.mse_loss
        n = len(xt)
        for _ in range(self.n_epochs):
            perm = torch.randperm(n, generator=gen)
            tot_rec = tot_adv = tot_acc = 0.0
            for start in range(0, n, self.batch_size):
                b = perm[start:start + self.batch_size]
                xb, sb = xt[b], st[b]
                # Adversary step on a frozen code.
                with torch.no_grad():
                    z = enc(xb)
                loss_adv = ce(adv(z), sb)
                opt_adv.zero_grad()
                loss_adv.backward()
                opt_adv.step()
                # Auto-encoder step against the updated adversary.
                z = enc(xb)
                logits = adv(z)
                rec = mse(dec(z), xb)
                d_loss = ce(logits, sb)
                loss = self.reconstruction_weight * rec - self.adversary_weight * d_loss
                opt_ae.zero_grad()
                loss.backward()
                opt_ae.step()
                tot_rec += rec.item() * len(b)
                tot_adv += d_loss.item() * len(b)
                tot_acc += (logits.argmax(1) == sb).sum().item()
            self.history_.append({"reconstruction": tot_rec / n, "adversary": tot_adv / n,
                                  "adversary_accuracy": tot_acc / n})

    def transform(self, X: np.ndarray) -> np.ndarray:
        """The censored codes (n, latent_dim) of ``X``."""
        torch = _import_torch()
        if not hasattr(self, "_encoder"):
            raise RuntimeError("call fit() first")
        xt = torch.as_tensor((np.asarray(X, dtype=np.float64) - self.mean_) / self.scale_,
                             dtype=torch.float32)
        with torch.no_grad():
            return self._encoder(xt).double().numpy()

    def fit_transform(self, X: np.ndarray, labels) -> np.ndarray:
        """Fit, then return the codes of ``X``."""
        return self.fit(X, labels).transform(X)


def aae_tsne(
    X: np.ndarray,
    labels,
    random_state: int | None = None,
    aae_params: dict | None = None,
    **tsne_params,
) -> tuple[np.ndarray, AdversarialCensor]:
    """Censor ``labels`` from ``X`` with an adversarial auto-encoder, then run t-SNE.

    Parameters
    ----------
    X : ndarray (n, d)
    labels : array-like (n,) or (n, m)
        Labels to remove (several columns are censored jointly).
    random_state : int, optional
        Seeds both the auto-encoder and t-SNE.
    aae_params : dict, optional
        Parameters of :class:`AdversarialCensor`.
    **tsne_params
        Passed to :class:`ctsne.ConditionalTSNE` (run without a prior).

    Returns
    -------
    Y : ndarray (n, 2)
    censor : AdversarialCensor
    """
    from ..estimator.tsne import ConditionalTSNE

    censor = AdversarialCensor(random_state=random_state, **(aae_params or {}))
    Z = censor.fit_transform(X, labels)
    Y = ConditionalTSNE(random_state=random_state, **tsne_params).fit_transform(Z, None)
    return Y, censor
