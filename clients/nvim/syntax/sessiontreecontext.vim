" The context buffer of the sessiontree plugin (sessiontree://context): what the model sees.
if exists('b:current_syntax')
  finish
endif

syntax match sessiontreeContextRole /^[A-Za-z]\+:/

highlight default link sessiontreeContextRole Statement

let b:current_syntax = 'sessiontreecontext'
