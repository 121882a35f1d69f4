"""The live watch: while a session follows its logs, whether its ranks are still moving, told without a key
press. When every log went quiet (or a GPU sits wedged), every rank's stack is read a few times a second
apart (:mod:`sparktui.core.stacks`), the ranks grouped by where they wait, and the reading judged
(``verdict``: hung, loading, progressing, idle); when to read is ``pacing``'s, the reading itself
``watch``'s. A hung rank becomes a critical finding that names it, its node, what it does and where the
others wait; it clears when a later reading shows the ranks moving."""
