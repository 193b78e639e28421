/* placeholder: the web console replaces this file */
