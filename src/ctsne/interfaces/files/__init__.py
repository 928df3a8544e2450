"""Files in and out: reading tables, writing results atomically, features from columns."""
