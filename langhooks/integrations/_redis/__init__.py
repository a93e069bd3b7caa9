"""Redis: the event publisher, readers, consumer groups and run stores."""
