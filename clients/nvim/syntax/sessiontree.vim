" The tree buffer of the sessiontree plugin (sessiontree://tree).
if exists('b:current_syntax')
  finish
endif

syntax match sessiontreeTitle /\%1l.*/
syntax match sessiontreeHelp /\%2l.*/
syntax match sessiontreeOnPath /●/ nextgroup=sessiontreeKind skipwhite
syntax match sessiontreeOffPath /○/ nextgroup=sessiontreeKind skipwhite
syntax match sessiontreeKind /[^:]\+:/ contained
syntax match sessiontreeLabel / \[[^\]]*\]\%( ← leaf\)\?$/ contains=sessiontreeLeaf
syntax match sessiontreeLeaf /← leaf$/
syntax match sessiontreeElided /^…/

highlight default link sessiontreeTitle Title
highlight default link sessiontreeHelp Comment
highlight default link sessiontreeOnPath Special
highlight default link sessiontreeOffPath Comment
highlight default link sessiontreeKind Statement
highlight default link sessiontreeLabel Identifier
highlight default link sessiontreeLeaf WarningMsg
highlight default link sessiontreeElided Comment

let b:current_syntax = 'sessiontree'
