"""BERT's optimizer recipe on Keras 3 optimizers.

AdamW (or LAMB for large-batch pre-training) with decoupled weight decay that skips
LayerNorm weights and biases, gradients clipped to a global norm of 1.0, and a
learning rate that rises linearly from 0 over the warm-up steps, then falls linearly
to 0 at the last step (google-research/bert `optimization.py`, Hugging Face
`get_linear_schedule_with_warmup`).

Example:
    >>> optimizer = create_optimizer(learning_rate=2e-5, num_train_steps=1000, num_warmup_steps=100)
    >>> type(optimizer).__name__, optimizer.weight_decay, optimizer.global_clipnorm
    ('AdamW', 0.01, 1.0)

The optimizers are Keras' AdamW and Lamb with three fixes (see `_BertRecipe`): their
weight-decay exclusions are saved with them, the global norm is that of the dense
gradient (one device or the sum over replicas), and AdamW's epsilon sits where PyTorch's
does. One training step equals transformers' with PyTorch's AdamW
(tests/test_trained_checkpoint_parity.py).

Differences from the original recipe:
- AdamW corrects the bias of its moment estimates (PyTorch's and Hugging Face's AdamW do
  too; google-research/bert's `AdamWeightDecayOptimizer` does not).
- Lamb applies the weight decay outside its trust ratio and computes the trust ratio
  for every variable (the LAMB paper puts the decay inside it and NVIDIA skips
  LayerNorm and biases).
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

OPTIMIZER_NAMES = ("adamw", "lamb")


@keras.saving.register_keras_serializable(package="bert_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `peak_learning_rate` over `num_warmup_steps`, then linear decay to 0
    at `num_train_steps` (and 0 after it).

    Written by hand because Keras has no such schedule: `CosineDecay`'s warm-up is
    followed by a cosine, not a linear, decay, and `PolynomialDecay` has no warm-up.

    Example:
        >>> schedule = WarmupLinearDecay(1e-4, num_train_steps=10, num_warmup_steps=2)
        >>> [round(float(schedule(step)), 6) for step in (0, 1, 2, 6, 10, 12)]
        [0.0, 5e-05, 0.0001, 5e-05, 0.0, 0.0]
    """

    def __init__(self, peak_learning_rate: float, num_train_steps: int, num_warmup_steps: int = 0):
        if peak_learning_rate <= 0:
            raise ValueError(f"WarmupLinearDecay: peak_learning_rate must be positive, got {peak_learning_rate!r}.")
        if not 0 <= num_warmup_steps < num_train_steps:
            raise ValueError(
                "WarmupLinearDecay: need 0 <= num_warmup_steps < num_train_steps, got "
                f"num_warmup_steps={num_warmup_steps!r}, num_train_steps={num_train_steps!r}."
            )
        self.peak_learning_rate = float(peak_learning_rate)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        # max(..., 1) keeps the division defined without warm-up, where `step < 0` never holds.
        warmup_rate = self.peak_learning_rate * step / max(self.num_warmup_steps, 1)
        remaining = (self.num_train_steps - step) / (self.num_train_steps - self.num_warmup_steps)
        decay_rate = self.peak_learning_rate * tf.maximum(remaining, 0.0)
        return tf.where(step < self.num_warmup_steps, warmup_rate, decay_rate)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
        }


class _BertRecipe:
    """What BERT's recipe needs from an optimizer beyond Keras' own (mixed into AdamW and Lamb).

    1. The weight-decay exclusions are an argument and part of `get_config`. Keras'
       optimizers take them through `exclude_from_weight_decay()` and leave them out of
       their config, so an optimizer restored with a `.keras` model (to resume training)
       would silently decay LayerNorm weights and biases again.
    2. `global_clipnorm` clips the norm of the real gradient. Embedding gradients arrive
       as IndexedSlices with a row per token, repeated rows included; Keras takes the norm
       of those rows, not of their sums, so a batch with repeated words was clipped by a
       different factor than PyTorch's dense gradient gives. They are made dense first
       (the Adam update reads every row anyway).
    3. Under a distribution strategy, `global_clipnorm` clips the norm of the summed
       gradient. Keras' TensorFlow optimizer clips each replica's share before it sums
       the shares, which lets the update grow with the number of replicas.
    4. With gradient accumulation, the learning-rate schedule counts optimizer updates, as
       `OptimizerConfig.num_train_steps` does. Keras evaluates it at the count of batches, so
       the rate fell `gradient_accumulation_steps` times too fast.
    5. Gradient accumulation works under a strategy of several replicas. Keras decides in a
       conditional whether a batch updates the weights or only accumulates, and all-reduces the
       gradients inside it, which replicas cannot do; here they all-reduce every batch's
       gradients first, and each replica's conditional only updates its own copies.
    2 and 3 override `_clip_gradients`, a private hook of Keras' `Optimizer.apply`, 4
    `_get_current_learning_rate` and 5 `_backend_apply_gradients`; tests/test_optimization.py,
    tests/test_mirrored_strategy.py and tests/test_finetune_strategies.py check they still run
    after a Keras upgrade.
    """

    def __init__(self, *, exclude_from_weight_decay=(), **kwargs):
        super().__init__(**kwargs)
        self.weight_decay_exclusions = tuple(exclude_from_weight_decay)
        self.exclude_from_weight_decay(var_names=list(self.weight_decay_exclusions))

    def _clip_gradients(self, grads):
        dense = [None if gradient is None else tf.convert_to_tensor(gradient) for gradient in grads]
        context = tf.distribute.get_replica_context()  # None in a cross-replica context
        replicas = context.num_replicas_in_sync if context else 1
        if not self.global_clipnorm or replicas == 1:
            return super()._clip_gradients(dense)
        # Sum, clip, and hand on each replica's 1/replicas of the result, which Keras sums again.
        clipped, _ = tf.clip_by_global_norm(context.all_reduce(tf.distribute.ReduceOp.SUM, dense), self.global_clipnorm)
        return [tf.math.scalar_mul(1.0 / replicas, gradient) for gradient in clipped]

    def _backend_apply_gradients(self, grads, trainable_variables):
        context = tf.distribute.get_replica_context()  # None in a cross-replica context
        if not self.gradient_accumulation_steps or context is None or context.num_replicas_in_sync == 1:
            return super()._backend_apply_gradients(grads, trainable_variables)
        steps = self.gradient_accumulation_steps
        summed = context.all_reduce(tf.distribute.ReduceOp.SUM, [tf.convert_to_tensor(g) for g in grads])
        accumulators = [self._accumulated_gradients[self._get_variable_index(v)].value for v in trainable_variables]
        totals = [gradient + accumulator for gradient, accumulator in zip(summed, accumulators)]
        factor = tf.constant(1.0)  # of global-norm clipping, on the mean of the accumulated gradients
        if self.global_clipnorm:
            factor = tf.minimum(1.0, self.global_clipnorm / tf.linalg.global_norm([t / steps for t in totals]))
        is_update = tf.equal((self._iterations + 1) % steps, 0)

        def update_or_accumulate(variable, total, accumulator, is_update, factor):  # one replica's copies
            def update():
                if self._use_weight_decay(variable):
                    variable.assign_sub(variable * tf.cast(self.weight_decay * self.learning_rate, variable.dtype))
                self.update_step(tf.cast(total * (factor / steps), variable.dtype), variable, self.learning_rate)
                accumulator.assign(tf.zeros_like(accumulator))

            def accumulate():
                accumulator.assign(total)

            tf.cond(is_update, update, accumulate)

        def apply(distribution, totals, accumulators, is_update, factor):
            for variable, total, accumulator in zip(trainable_variables, totals, accumulators):
                distribution.extended.update(variable.value, update_or_accumulate,
                                             args=(total, accumulator, is_update, factor), group=False)

        context.merge_call(apply, args=(totals, accumulators, is_update, factor))

    def _get_current_learning_rate(self):
        if isinstance(self._learning_rate, keras.optimizers.schedules.LearningRateSchedule):
            return self._learning_rate(self.iterations)  # updates: batches // gradient_accumulation_steps
        return super()._get_current_learning_rate()

    def get_config(self):
        return {**super().get_config(), "exclude_from_weight_decay": list(self.weight_decay_exclusions)}


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamW(_BertRecipe, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with BERT's recipe (`_BertRecipe`) and the Adam step of PyTorch.

    The step is the Adam paper's, as PyTorch's and Hugging Face's AdamW take it: epsilon is added
    to the root of the bias-corrected second moment, m̂ / (sqrt(v̂) + epsilon). Keras adds it
    before the correction, which makes epsilon up to 1 / sqrt(1 - beta_2) = 32 times larger in
    the first steps (a smaller step for small gradients, all through a short fine-tuning run).
    On TensorFlow each variable and its moments are updated in one fused kernel
    (`ResourceApplyAdam`): Keras writes the step as a dozen separate whole-tensor operations, a
    sizeable part of a small model's step (the 31,000 x 256 word embeddings of `mini`).
    `amsgrad` takes Keras' own step.
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad or keras.backend.backend() != "tensorflow":
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        index = self._get_variable_index(variable)
        constant = lambda value: tf.cast(value, dtype)  # noqa: E731
        beta2_power = tf.pow(constant(self.beta_2), step)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].value.handle,
            v=self._velocities[index].value.handle,
            beta1_power=tf.pow(constant(self.beta_1), step),
            beta2_power=beta2_power,
            lr=constant(learning_rate),
            beta1=constant(self.beta_1),
            beta2=constant(self.beta_2),
            # The kernel adds epsilon to sqrt(v), before v's bias correction; scaled so, it is added after
            # it, as in the Adam paper, PyTorch and Hugging Face: m̂ / (sqrt(v̂) + epsilon).
            epsilon=constant(self.epsilon) * tf.sqrt(1 - beta2_power),
            grad=constant(gradient),
        )


@keras.saving.register_keras_serializable(package="bert_tf")
class Lamb(_BertRecipe, keras.optimizers.Lamb):
    """`keras.optimizers.Lamb` that saves its weight-decay exclusions and clips the global gradient under a strategy."""


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """Every setting of BERT's optimizer (defaults: google-research/bert's fine-tuning recipe).

    Steps count optimizer updates: with gradient accumulation, one update per
    `gradient_accumulation_steps` batches.

    Example:
        >>> config = OptimizerConfig(learning_rate=1e-4, num_train_steps=10000, num_warmup_steps=1000, optimizer="lamb")
        >>> type(config.build()).__name__
        'Lamb'
    """

    learning_rate: float  # peak rate, reached at the end of warm-up (fine-tuning: 2e-5 to 5e-5)
    num_train_steps: int  # updates in the whole run; the rate reaches 0 at the last one
    num_warmup_steps: int = 0  # updates of linear warm-up from 0 (BERT: 10% of num_train_steps)
    optimizer: str = "adamw"  # "adamw" (fine-tuning) or "lamb" (large-batch pre-training)
    weight_decay: float = 0.01  # decoupled: each update also subtracts learning_rate * weight_decay * weight
    # Substrings of variable names (Keras names: "kernel", "bias", LayerNorm's "gamma"/"beta") kept out of weight decay.
    exclude_from_weight_decay: tuple[str, ...] = ("bias", "gamma", "beta")
    clipnorm: float | None = 1.0  # clip the global norm of all gradients together; None: no clipping
    epsilon: float = 1e-6  # added to the root of the second moment
    beta_1: float = 0.9  # decay of the first-moment estimate
    beta_2: float = 0.999  # decay of the second-moment estimate
    gradient_accumulation_steps: int = 1  # average the gradients of this many batches per update

    def __post_init__(self):
        if self.optimizer not in OPTIMIZER_NAMES:
            raise ValueError(f"OptimizerConfig: unknown optimizer {self.optimizer!r}; use one of {list(OPTIMIZER_NAMES)}.")
        if self.weight_decay < 0:
            raise ValueError(f"OptimizerConfig: weight_decay must be >= 0, got {self.weight_decay!r}.")
        if self.clipnorm is not None and self.clipnorm <= 0:
            raise ValueError(f"OptimizerConfig: clipnorm must be positive or None, got {self.clipnorm!r}.")
        steps = self.gradient_accumulation_steps
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"OptimizerConfig: gradient_accumulation_steps must be an integer >= 1, got {steps!r}.")
        if isinstance(self.exclude_from_weight_decay, str):
            raise ValueError("OptimizerConfig: exclude_from_weight_decay must be a sequence of names, not one string.")
        object.__setattr__(self, "exclude_from_weight_decay", tuple(self.exclude_from_weight_decay))
        self.schedule()  # validates the learning rate and step counts

    def schedule(self) -> WarmupLinearDecay:
        """The learning-rate schedule alone (e.g. to plot or log it)."""
        return WarmupLinearDecay(self.learning_rate, self.num_train_steps, self.num_warmup_steps)

    def build(self) -> keras.optimizers.Optimizer:
        """A new optimizer with these settings (create it inside a distribution strategy's scope)."""
        optimizer_class = {"adamw": AdamW, "lamb": Lamb}[self.optimizer]
        return optimizer_class(
            learning_rate=self.schedule(),
            weight_decay=self.weight_decay,
            exclude_from_weight_decay=self.exclude_from_weight_decay,
            global_clipnorm=self.clipnorm,
            epsilon=self.epsilon,
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            # Keras counts accumulation only from 2 batches up.
            gradient_accumulation_steps=self.gradient_accumulation_steps if self.gradient_accumulation_steps > 1 else None,
        )


def create_optimizer(
    learning_rate: float, num_train_steps: int, num_warmup_steps: int = 0, **settings
) -> keras.optimizers.Optimizer:
    """Shorthand for `OptimizerConfig(learning_rate, num_train_steps, num_warmup_steps, **settings).build()`.

    `settings` are the other `OptimizerConfig` fields: `optimizer`, `weight_decay`,
    `exclude_from_weight_decay`, `clipnorm`, `epsilon`, `beta_1`, `beta_2`,
    `gradient_accumulation_steps`.
    """
    return OptimizerConfig(learning_rate, num_train_steps, num_warmup_steps, **settings).build()
