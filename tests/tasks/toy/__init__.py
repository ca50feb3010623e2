"""A toy task defined outside the library (text → a score), added through `bert_tf.tasks.registry.register_task`
alone: the test that a task is its folder and one registry line."""
