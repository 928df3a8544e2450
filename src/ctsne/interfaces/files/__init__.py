"""Files in and out: the formats (:mod:`.formats`), reading tables (:mod:`.tables`), features
from columns (:mod:`.features`), writing results atomically (:mod:`.writing`) and saved
models (:mod:`.models`)."""
